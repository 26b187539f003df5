#include "server/http/tool_mapping.h"

namespace vks::http {

using nlohmann::json;

namespace {

std::string dump_ordered(const JsonBody& j) { return j.dump(-1, ' ', false, JsonBody::error_handler_t::replace); }

std::optional<ApiError> check_tool(const JsonBody& tool, const std::string& where) {
  if (!tool.is_object()) return bad_field(where + " must be an object {\"type\": \"function\", \"function\": {...}}", where);
  if (auto type = tool.find("type"); type != tool.end() && !(type->is_string() && *type == "function")) {
    return bad_field(where + ".type must be \"function\"", where + ".type");
  }
  const auto fn = tool.find("function");
  if (fn == tool.end() || !fn->is_object()) return bad_field(where + ".function must be an object", where + ".function");
  const auto name = fn->find("name");
  if (name == fn->end() || !name->is_string() || name->get<std::string>().empty()) {
    return bad_field(where + ".function.name must be a non-empty string", where + ".function.name");
  }
  if (auto p = fn->find("parameters"); p != fn->end() && !p->is_null() && !p->is_object()) {
    return bad_field(where + ".function.parameters must be a JSON Schema object", where + ".function.parameters");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> map_tools(const JsonBody& body, json& wire, bool& offered) {
  offered = false;
  bool have_tools = false;
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return bad_field("tools must be an array of {\"type\": \"function\", \"function\": {...}}", "tools");
    for (size_t i = 0; i < it->size(); ++i) {
      if (auto e = check_tool((*it)[i], "tools." + std::to_string(i))) return e;
    }
    have_tools = !it->empty();
    if (have_tools) wire["tools"] = dump_ordered(*it);  // as text: parameter order is meaning
  }
  std::string choice = have_tools ? "auto" : "none";
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (it->is_string() && (*it == "auto" || *it == "none" || *it == "required")) {
      choice = it->get<std::string>();
    } else if (it->is_object()) {
      const auto fn = it->find("function");
      const auto name = fn != it->end() && fn->is_object() ? fn->find("name") : it->end();
      if (fn == it->end() || !fn->is_object() || name == fn->end() || !name->is_string() || name->get<std::string>().empty()) {
        return bad_field("tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}",
                         "tool_choice");
      }
      choice = "function";
      wire["tool_name"] = name->get<std::string>();
    } else {
      return bad_field("tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}",
                       "tool_choice");
    }
    if (!have_tools && choice != "none" && choice != "auto") {
      return bad_field("tool_choice " + choice + " needs tools", "tool_choice");
    }
  }
  if (have_tools) wire["tool_choice"] = choice;
  if (auto it = body.find("parallel_tool_calls"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return bad_field("parallel_tool_calls must be a boolean", "parallel_tool_calls");
    wire["parallel_tool_calls"] = it->get<bool>();
  }
  offered = have_tools && choice != "none";
  // A forced call is the whole answer: the response format (response_format, text.format) is
  // for a text answer that this turn will not have, so it does not constrain this turn. Agents
  // send both (a structured final answer, a forced first call); OpenAI answers the call.
  if (offered && (choice == "required" || choice == "function")) wire.erase("json_schema");
  return std::nullopt;
}

std::variant<std::string, ApiError> wire_tool_calls(const JsonBody& calls, const std::string& where) {
  if (!calls.is_array()) return bad_field(where + " must be an array of tool calls", where);
  JsonBody out = JsonBody::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const JsonBody& call = calls[i];
    const std::string at = where + "." + std::to_string(i);
    const auto fn = call.is_object() ? call.find("function") : JsonBody::const_iterator();
    if (!call.is_object() || fn == call.end() || !fn->is_object()) {
      return bad_field(at + " must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}", at);
    }
    const auto name = fn->find("name");
    if (name == fn->end() || !name->is_string() || name->get<std::string>().empty()) {
      return bad_field(at + ".function.name must be a non-empty string", at + ".function.name");
    }
    JsonBody arguments = JsonBody::object();
    if (auto a = fn->find("arguments"); a != fn->end() && !a->is_null()) {
      if (a->is_object()) {
        arguments = *a;
      } else if (a->is_string()) {
        arguments = JsonBody::parse(a->get<std::string>(), nullptr, /*allow_exceptions=*/false);
        if (arguments.is_discarded() || !arguments.is_object()) {
          return bad_field(at + ".function.arguments must be a JSON object or its text", at + ".function.arguments");
        }
      } else {
        return bad_field(at + ".function.arguments must be a JSON object or its text", at + ".function.arguments");
      }
    }
    JsonBody entry = JsonBody::object();
    if (auto id = call.find("id"); id != call.end() && id->is_string()) entry["id"] = *id;
    entry["type"] = "function";
    entry["function"] = {{"name", *name}, {"arguments", std::move(arguments)}};
    out.push_back(std::move(entry));
  }
  return dump_ordered(out);
}

std::variant<std::string, ApiError> optional_string(const JsonBody& body, const char* key, const std::string& where) {
  const auto it = body.is_object() ? body.find(key) : body.end();
  if (!body.is_object() || it == body.end() || it->is_null()) return std::string();
  if (!it->is_string()) return bad_field(where + "." + key + " must be a string", where + "." + key);
  return it->get<std::string>();
}

std::variant<bool, ApiError> optional_bool(const JsonBody& body, const char* key, bool fallback, const std::string& where) {
  const auto it = body.is_object() ? body.find(key) : body.end();
  if (!body.is_object() || it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return bad_field(where + "." + key + " must be a boolean", where + "." + key);
  return it->get<bool>();
}

std::string tool_call_id(const std::string& request_id, size_t index) {
  return "call_" + request_id + "_" + std::to_string(index);
}

std::string tool_use_id(const std::string& request_id, size_t index) {
  return "toolu_" + request_id + "_" + std::to_string(index);
}

json openai_tool_call(const chat::ToolCall& call, const std::string& request_id, size_t index, bool streamed) {
  json out = json::object();
  if (streamed) out["index"] = index;
  out["id"] = tool_call_id(request_id, index);
  out["type"] = "function";
  out["function"] = {{"name", call.name}, {"arguments", call.arguments}};
  return out;
}

json ollama_tool_call(const chat::ToolCall& call) {
  json arguments = json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  if (arguments.is_discarded()) arguments = json::object();
  return {{"function", {{"name", call.name}, {"arguments", std::move(arguments)}}}};
}

}  // namespace vks::http
