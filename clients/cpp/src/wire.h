#pragma once
// The client library's bridge to protocol/ (the one wire implementation): its public option and
// value types in, msgpack payloads out, and back. No msgpack code of its own.
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/requests.h"
#include "vkstream/types.h"
#include "vkstream/value.h"

namespace vkstream::detail {

// GenerateOptions → the protocol's generate request (unset options stay unset: server defaults).
vks::proto::GenerateRequest to_wire(const GenerateOptions& options);
// A generate request payload (a `chat` when options.messages is not empty).
std::string encode_generate(const GenerateOptions& options, int64_t tag);
// A request of `type` with `tag` and the fields of `fields` (a map, or nil for none).
std::string encode_simple_request(const std::string& type, int64_t tag, const Value& fields);

// The typed model answers, read by protocol/'s parser from an answer the client received (throws
// ClientError(kProtocol) when the daemon's answer is malformed).
ModelList to_model_list(const Value& answer);
LoadResult to_load_result(const Value& answer);
UnloadResult to_unload_result(const Value& answer);

std::string pack_value(const Value& v);
// Throws ClientError(kProtocol) when the bytes are not exactly one well-formed msgpack value.
Value unpack_value(std::string_view bytes);

}  // namespace vkstream::detail
