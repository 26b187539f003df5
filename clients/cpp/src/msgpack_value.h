#pragma once
// Conversion between vkstream::Value and msgpack bytes (one message = one msgpack map).
#include <string>
#include <string_view>

#include "vkstream/value.h"

namespace vkstream::detail {

std::string pack_value(const Value& v);
// Throws ClientError(kProtocol) when the bytes are not exactly one well-formed msgpack object
// (within depth and size limits).
Value unpack_value(std::string_view bytes);

}  // namespace vkstream::detail
