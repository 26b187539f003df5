#include "engine/chat/tool_prompt.h"

// Prompt text is built by string concatenation; GCC 12 reports a false -Wrestrict on
// `"literal" + std::string` at -O3 (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include "engine/common/error.h"

namespace vks::chat {
namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

// One call of an assistant turn with its arguments as an object.
ojson normalized_call(const ojson& call, const std::string& where) {
  if (!call.is_object()) throw vks::Error(ErrorCode::kInvalidArgument, where + " must be an object");
  const auto fn = call.find("function");
  if (fn == call.end() || !fn->is_object()) throw vks::Error(ErrorCode::kInvalidArgument, where + ".function must be an object");
  const auto name = fn->find("name");
  if (name == fn->end() || !name->is_string()) throw vks::Error(ErrorCode::kInvalidArgument, where + ".function.name must be a string");
  ojson out = call;
  if (!out.contains("type")) out["type"] = "function";
  ojson& args = out["function"]["arguments"];
  if (args.is_string()) {
    const std::string text = args.get<std::string>();
    ojson parsed = text.empty() ? ojson::object() : ojson::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      throw vks::Error(ErrorCode::kInvalidArgument, where + ".function.arguments must be a JSON object (as text)");
    }
    args = std::move(parsed);
  } else if (args.is_null()) {
    args = ojson::object();
  } else if (!args.is_object()) {
    throw vks::Error(ErrorCode::kInvalidArgument, where + ".function.arguments must be a JSON object (as text)");
  }
  return out;
}

std::string generic_call_text(const ojson& call) {
  const ojson& fn = call["function"];
  return "<tool_call>\n" + dump(ojson{{"name", fn["name"]}, {"arguments", fn["arguments"]}}) + "\n</tool_call>";
}

}  // namespace

std::string generic_tools_prompt(const ojson& tools) {
  std::string text =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
  for (const ojson& tool : tools) text += "\n" + dump(tool);
  text +=
      "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
  return text;
}

ojson prepare_tool_messages(ojson messages, const ojson& tools, bool offer_tools, const ToolCallFormat& format) {
  for (size_t i = 0; i < messages.size(); ++i) {
    ojson& m = messages[i];
    auto calls = m.find("tool_calls");
    if (calls == m.end()) continue;
    if (!calls->is_array()) throw vks::Error(ErrorCode::kInvalidArgument, "messages." + std::to_string(i) + ".tool_calls must be an array");
    for (size_t k = 0; k < calls->size(); ++k) {
      (*calls)[k] = normalized_call((*calls)[k], "messages." + std::to_string(i) + ".tool_calls." + std::to_string(k));
    }
  }
  if (format.native) return messages;
  ojson out = ojson::array();
  if (offer_tools && tools.is_array() && !tools.empty()) {
    const std::string section = generic_tools_prompt(tools);
    if (!messages.empty() && messages[0].value("role", "") == "system") {
      std::string content = messages[0].value("content", "");
      messages[0]["content"] = content.empty() ? section : content + "\n\n" + section;
    } else {
      out.push_back({{"role", "system"}, {"content", section}});
    }
  }
  for (ojson& m : messages) {
    const std::string role = m.value("role", "");
    if (role == "assistant" && m.contains("tool_calls")) {
      std::string content = m.value("content", "");
      for (const ojson& call : m["tool_calls"]) content += (content.empty() ? "" : "\n") + generic_call_text(call);
      out.push_back({{"role", "assistant"}, {"content", content}});
    } else if (role == "tool") {
      out.push_back({{"role", "user"}, {"content", "<tool_response>\n" + m.value("content", "") + "\n</tool_response>"}});
    } else {
      out.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace vks::chat
