#include "engine/chat/json_value.h"

#include "engine/common/error.h"

namespace vks::jinja {

Value value_from_json(const nlohmann::ordered_json& json, int max_depth) {
  if (max_depth <= 0) throw vks::Error(ErrorCode::kInvalidArgument, "JSON nested too deeply for a template");
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = json.get<uint64_t>();
      return u > static_cast<uint64_t>(INT64_MAX) ? Value::number(static_cast<double>(u)) : Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::number(json.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Value::List items;
      for (const auto& item : json) items.push_back(value_from_json(item, max_depth - 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value::Dict dict;
      for (const auto& [key, item] : json.items()) dict.set(key, value_from_json(item, max_depth - 1));
      return Value::dict(std::move(dict));
    }
    default: return Value();
  }
}

}  // namespace vks::jinja
