#pragma once
// A msgpack value as JSON text (for `json_schema` sent as a map rather than as JSON text).
#include <string>

#include <msgpack.hpp>

namespace vks::proto {

// Maps, arrays, strings, numbers, booleans and nil. False (with `why` set) for bin/ext values,
// non-string map keys, non-finite floats or strings that are not UTF-8.
bool msgpack_to_json_text(const msgpack::object& value, std::string& out, std::string& why);

}  // namespace vks::proto
