#pragma once
// Client → server payloads (docs/PROTOCOL.md "Requests"): one msgpack map each.
#include <cstdint>
#include <string>

#include "vkstream/types.h"
#include "vkstream/value.h"

namespace vkstream::detail {

// A request of `type` with `tag` and the fields of `fields` (a map, or nil for none).
std::string encode_simple_request(const std::string& type, int64_t tag, const Value& fields);
// A generate request: only the options that are set are sent (the daemon's defaults apply).
std::string encode_generate(const GenerateOptions& options, int64_t tag);

}  // namespace vkstream::detail
