#pragma once
// vkstream::Value: a dynamic value mirroring one msgpack object (maps, arrays, scalars), so callers
// can read fields the typed structs do not cover (stats, model info) and print events as JSON.
// It is the protocol layer's value type (protocol/value.h, installed beside this header).
#include "protocol/value.h"

namespace vkstream {

using Value = vks::proto::Value;

}  // namespace vkstream
