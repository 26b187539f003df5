#include "protocol/json_text.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace vks::proto {

namespace {

bool convert(const msgpack::object& o, nlohmann::ordered_json& out, std::string& why) {
  switch (o.type) {
    case msgpack::type::NIL: out = nullptr; return true;
    case msgpack::type::BOOLEAN: out = o.via.boolean; return true;
    case msgpack::type::POSITIVE_INTEGER: out = o.via.u64; return true;
    case msgpack::type::NEGATIVE_INTEGER: out = o.via.i64; return true;
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      if (!std::isfinite(o.via.f64)) {
        why = "non-finite number";
        return false;
      }
      out = o.via.f64;
      return true;
    case msgpack::type::STR: out = std::string(o.via.str.ptr, o.via.str.size); return true;
    case msgpack::type::ARRAY:
      out = nlohmann::ordered_json::array();
      for (uint32_t i = 0; i < o.via.array.size; ++i) {
        nlohmann::ordered_json item;
        if (!convert(o.via.array.ptr[i], item, why)) return false;
        out.push_back(std::move(item));
      }
      return true;
    case msgpack::type::MAP:
      out = nlohmann::ordered_json::object();
      for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const auto& kv = o.via.map.ptr[i];
        if (kv.key.type != msgpack::type::STR) {
          why = "map keys must be strings";
          return false;
        }
        nlohmann::ordered_json item;
        if (!convert(kv.val, item, why)) return false;
        out[std::string(kv.key.via.str.ptr, kv.key.via.str.size)] = std::move(item);
      }
      return true;
    default: why = "bin and ext values have no JSON form"; return false;
  }
}

}  // namespace

bool msgpack_to_json_text(const msgpack::object& value, std::string& out, std::string& why) {
  nlohmann::ordered_json j;
  if (!convert(value, j, why)) return false;
  try {
    out = j.dump();
  } catch (const nlohmann::ordered_json::exception&) {
    why = "strings must be UTF-8";
    return false;
  }
  return true;
}

}  // namespace vks::proto
