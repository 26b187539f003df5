#pragma once
// Conversion between proto::Value and msgpack bytes (one message = one msgpack value). Used by
// clients (C++ library, CLI, tests) to read any server message generically.
#include <string>
#include <string_view>

#include "protocol/errors.h"
#include "protocol/value.h"

namespace vks::proto {

std::string pack_value(const Value& v);
// bad_frame when the bytes are not exactly one well-formed msgpack value within the protocol's
// depth and size limits (detail::skim). Never throws.
Result<Value> unpack_value(std::string_view bytes);

}  // namespace vks::proto
