#include "server/http/anthropic_messages.h"

#include "server/http/answer_parse.h"
#include "server/http/tool_mapping.h"

namespace vks::http {

using nlohmann::json;

namespace {

bool present(const JsonBody& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

// A content block list (or a plain string) -> its text; other block types are the caller's.
std::variant<std::string, ApiError> text_of(const JsonBody& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return bad_field(where + " must be a string or an array of content blocks", where);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const JsonBody& block = content[i];
    const std::string at = where + "." + std::to_string(i);
    if (!block.is_object() || !block.contains("type") || block["type"] != "text" || !block.contains("text") ||
        !block["text"].is_string()) {
      return bad_field(at + " must be a text block {\"type\": \"text\", \"text\": \"...\"}", at);
    }
    if (!text.empty()) text += "\n";
    text += block["text"].get<std::string>();
  }
  return text;
}

// One Anthropic message -> wire turns (a user message's tool_result blocks become tool turns).
std::optional<ApiError> add_turns(const JsonBody& m, const std::string& where, json& turns) {
  if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
    return bad_field(where + " must be an object {role, content}", where);
  }
  const std::string role = m["role"].get<std::string>();
  if (role != "user" && role != "assistant") return bad_field(where + ".role must be user or assistant", where + ".role");
  if (!present(m, "content")) return bad_field(where + ".content is required", where + ".content");
  const JsonBody& content = m["content"];
  if (content.is_string()) {
    turns.push_back({{"role", role}, {"content", content.get<std::string>()}});
    return std::nullopt;
  }
  if (!content.is_array()) return bad_field(where + ".content must be a string or an array of content blocks", where + ".content");
  std::string text;
  std::string reasoning;
  JsonBody calls = JsonBody::array();
  for (size_t i = 0; i < content.size(); ++i) {
    const JsonBody& block = content[i];
    const std::string at = where + ".content." + std::to_string(i);
    const std::string type = block.is_object() && block.contains("type") && block["type"].is_string() ? block["type"].get<std::string>() : "";
    if (type == "text" && block.contains("text") && block["text"].is_string()) {
      if (!text.empty()) text += "\n";
      text += block["text"].get<std::string>();
    } else if (type == "tool_use" && role == "assistant") {
      if (!block.contains("name") || !block["name"].is_string()) return bad_field(at + ".name must be a string", at + ".name");
      auto id = optional_string(block, "id", at);
      if (auto* e = std::get_if<ApiError>(&id)) return std::move(*e);
      calls.push_back({{"id", std::move(std::get<std::string>(id))},
                       {"type", "function"},
                       {"function", {{"name", block["name"]}, {"arguments", block.contains("input") ? block["input"] : JsonBody::object()}}}});
    } else if (type == "tool_result" && role == "user") {
      if (!block.contains("tool_use_id") || !block["tool_use_id"].is_string()) {
        return bad_field(at + ".tool_use_id must be a string", at + ".tool_use_id");
      }
      std::string result;
      if (present(block, "content")) {
        auto t = text_of(block["content"], at + ".content");
        if (auto* e = std::get_if<ApiError>(&t)) return std::move(*e);
        result = std::get<std::string>(t);
      }
      auto is_error = optional_bool(block, "is_error", false, at);
      if (auto* e = std::get_if<ApiError>(&is_error)) return std::move(*e);
      if (std::get<bool>(is_error)) result = "Error: " + result;
      turns.push_back({{"role", "tool"}, {"content", result}, {"tool_call_id", block["tool_use_id"].get<std::string>()}});
    } else if (type == "thinking" && role == "assistant") {
      // Earlier reasoning, given back: the template renders it where it wants it (Qwen3's, in the
      // current tool loop); its signature means nothing here.
      if (!block.contains("thinking") || !block["thinking"].is_string()) return bad_field(at + ".thinking must be a string", at + ".thinking");
      if (!reasoning.empty()) reasoning += "\n";
      reasoning += block["thinking"].get<std::string>();
    } else if (type == "redacted_thinking" || type == "thinking") {
      continue;  // encrypted (nothing to show), or on a user turn
    } else {
      return bad_field(at + ": content blocks of type '" + type + "' are not supported here", at + ".type");
    }
  }
  if (role == "user" && text.empty() && !turns.empty() && turns.back()["role"] == "tool") return std::nullopt;
  json turn = {{"role", role}, {"content", text}};
  if (!reasoning.empty()) turn["reasoning_content"] = std::move(reasoning);
  if (!calls.empty()) {
    auto wire_calls = wire_tool_calls(calls, where + ".content");
    if (auto* e = std::get_if<ApiError>(&wire_calls)) return std::move(*e);
    turn["tool_calls"] = std::move(std::get<std::string>(wire_calls));
  }
  turns.push_back(std::move(turn));
  return std::nullopt;
}

// tools [{name, description, input_schema}] and tool_choice {type: auto|any|tool|none, name,
// disable_parallel_tool_use} in OpenAI's shape, for map_tools.
std::variant<JsonBody, ApiError> openai_tools(const JsonBody& body) {
  JsonBody out = JsonBody::object();
  if (present(body, "tools")) {
    const JsonBody& tools = body["tools"];
    if (!tools.is_array()) return bad_field("tools must be an array of {name, description, input_schema}", "tools");
    JsonBody list = JsonBody::array();
    for (size_t i = 0; i < tools.size(); ++i) {
      const JsonBody& t = tools[i];
      const std::string at = "tools." + std::to_string(i);
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) return bad_field(at + ".name must be a string", at + ".name");
      JsonBody fn = {{"name", t["name"]}};
      if (t.contains("description")) fn["description"] = t["description"];
      if (t.contains("input_schema")) fn["parameters"] = t["input_schema"];
      list.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    out["tools"] = std::move(list);
  }
  if (present(body, "tool_choice")) {
    const JsonBody& c = body["tool_choice"];
    const std::string type = c.is_object() && c.contains("type") && c["type"].is_string() ? c["type"].get<std::string>() : "";
    if (type == "auto" || type == "none") {
      out["tool_choice"] = type;
    } else if (type == "any") {
      out["tool_choice"] = "required";
    } else if (type == "tool" && c.contains("name") && c["name"].is_string()) {
      out["tool_choice"] = {{"type", "function"}, {"function", {{"name", c["name"]}}}};
    } else {
      return bad_field("tool_choice must be {\"type\": \"auto\" | \"any\" | \"none\"} or {\"type\": \"tool\", \"name\": ...}", "tool_choice");
    }
    auto one = optional_bool(c, "disable_parallel_tool_use", false, "tool_choice");
    if (auto* e = std::get_if<ApiError>(&one)) return std::move(*e);
    if (std::get<bool>(one)) out["parallel_tool_calls"] = false;
  }
  return out;
}

std::string sse(const char* name, const json& data) { return std::string("event: ") + name + "\ndata: " + compact_dump(data) + "\n\n"; }

std::string stop_reason(proto::FinishReason reason, size_t calls) {
  if (reason == proto::FinishReason::kLength) return "max_tokens";
  if (calls > 0) return "tool_use";
  return "end_turn";
}

json usage_of(const Generation& g, const proto::StreamEvent* finished) {
  const int32_t prompt = finished != nullptr && finished->usage.prompt_tokens > 0 ? finished->usage.prompt_tokens : g.prompt_tokens;
  return {{"input_tokens", prompt}, {"output_tokens", finished != nullptr ? finished->usage.generated_tokens : 0}};
}

json tool_use_block(const Generation& g, const chat::ToolCall& call, size_t index) {
  json input = json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  if (input.is_discarded()) input = json::object();
  return {{"type", "tool_use"}, {"id", tool_use_id(g.id, index)}, {"name", call.name}, {"input", std::move(input)}};
}

std::string close_thinking(Generation& g) {
  if (g.reasoning_block < 0) return {};
  const int32_t index = g.reasoning_block;
  g.reasoning_block = -1;
  // No signature can be given (nothing is signed here); the field is there, empty, for clients
  // that expect it.
  return sse("content_block_delta", {{"type", "content_block_delta"}, {"index", index},
                                     {"delta", {{"type", "signature_delta"}, {"signature", ""}}}}) +
         sse("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
}

std::string close_text_block(Generation& g) {
  if (g.open_text_block < 0) return {};
  const int32_t index = g.open_text_block;
  g.open_text_block = -1;
  return sse("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
}

// The events for what the parsers settled (or all of the text without tools or reasoning).
std::string block_events(Generation& g, const AnswerPiece& piece) {
  std::string out;
  const chat::ToolParse& parsed = piece.answer;
  if (g.show_reasoning && !piece.reasoning.empty()) {  // the block comes first: nothing else is open
    if (g.reasoning_block < 0) {
      g.reasoning_block = g.blocks++;
      out += sse("content_block_start", {{"type", "content_block_start"}, {"index", g.reasoning_block},
                                         {"content_block", {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}}});
    }
    out += sse("content_block_delta", {{"type", "content_block_delta"}, {"index", g.reasoning_block},
                                       {"delta", {{"type", "thinking_delta"}, {"thinking", piece.reasoning}}}});
  }
  if (!parsed.text.empty() || !parsed.calls.empty() || !parsed.fragments.empty()) out += close_thinking(g);
  if (!parsed.text.empty()) {
    if (g.open_text_block < 0) {
      g.open_text_block = g.blocks++;
      out += sse("content_block_start", {{"type", "content_block_start"}, {"index", g.open_text_block},
                                         {"content_block", {{"type", "text"}, {"text", ""}}}});
    }
    out += sse("content_block_delta", {{"type", "content_block_delta"}, {"index", g.open_text_block},
                                       {"delta", {{"type", "text_delta"}, {"text", parsed.text}}}});
  }
  // A call's fragments open its tool_use block and stream its input; its end closes the block.
  each_call_event(
      parsed, g.tool_calls_sent,
      [&](const chat::ToolCallFragment& f) {
        if (!f.name.empty()) {
          out += close_text_block(g);
          g.open_tool_block = g.blocks++;
          json start = {{"type", "tool_use"}, {"id", tool_use_id(g.id, f.index)}, {"name", f.name}, {"input", json::object()}};
          out += sse("content_block_start", {{"type", "content_block_start"}, {"index", g.open_tool_block}, {"content_block", std::move(start)}});
        }
        out += sse("content_block_delta", {{"type", "content_block_delta"}, {"index", g.open_tool_block},
                                           {"delta", {{"type", "input_json_delta"}, {"partial_json", f.arguments}}}});
      },
      [&](const chat::ToolCall& call, size_t n) {
        if (call.streamed) {
          out += sse("content_block_stop", {{"type", "content_block_stop"}, {"index", g.open_tool_block}});
          g.open_tool_block = -1;
          return;
        }
        out += close_text_block(g);
        const int32_t index = g.blocks++;
        json start = tool_use_block(g, call, n);
        start["input"] = json::object();
        out += sse("content_block_start", {{"type", "content_block_start"}, {"index", index}, {"content_block", std::move(start)}});
        out += sse("content_block_delta", {{"type", "content_block_delta"}, {"index", index},
                                           {"delta", {{"type", "input_json_delta"}, {"partial_json", call.arguments}}}});
        out += sse("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
      });
  return out;
}

}  // namespace

const std::map<std::string, std::string>& anthropic_param_names() {
  static const std::map<std::string, std::string> names = {
      {"stop", "stop_sequences"}, {"prompt", "messages"}, {"prompt_ids", "messages"}, {"tool_name", "tool_choice"}};
  return names;
}

std::variant<AnthropicRequest, ApiError> map_anthropic_messages(const JsonBody& body, const ModelCatalogue& model) {
  AnthropicRequest out;
  json& w = out.wire;
  w = json::object();
  if (present(body, "model")) {
    if (!body["model"].is_string()) return bad_field("model must be a string", "model");
    if (!model.matches(body["model"].get<std::string>())) {
      return ApiError{404, "model '" + body["model"].get<std::string>() + "' not found; this server serves '" + model.id + "'",
                      "not_found_error", "model", 0};
    }
  }
  if (!present(body, "max_tokens")) return bad_field("max_tokens is required", "max_tokens", "missing_field");
  w["max_tokens"] = json(body["max_tokens"]);
  copy_field(body, "temperature", w, "temperature");
  copy_field(body, "top_p", w, "top_p");
  copy_field(body, "top_k", w, "top_k");
  copy_field(body, "stop_sequences", w, "stop");
  if (present(body, "stream")) {
    if (!body["stream"].is_boolean()) return bad_field("stream must be a boolean", "stream");
    out.stream = body["stream"].get<bool>();
  }
  json turns = json::array();
  if (present(body, "system")) {
    auto system = text_of(body["system"], "system");
    if (auto* e = std::get_if<ApiError>(&system)) return std::move(*e);
    turns.push_back({{"role", "system"}, {"content", std::get<std::string>(system)}});
  }
  if (!present(body, "messages") || !body["messages"].is_array() || body["messages"].empty()) {
    return bad_field("messages must be a non-empty array of {role, content}", "messages");
  }
  for (size_t i = 0; i < body["messages"].size(); ++i) {
    if (auto e = add_turns(body["messages"][i], "messages." + std::to_string(i), turns)) return std::move(*e);
  }
  w["messages"] = std::move(turns);
  auto tools = openai_tools(body);
  if (auto* e = std::get_if<ApiError>(&tools)) return std::move(*e);
  bool offered = false;
  if (auto e = map_tools(std::get<JsonBody>(tools), w, offered)) return std::move(*e);
  if (offered) {
    out.tools.emplace(model.tool_format);
    out.tools->stream_arguments(out.stream);  // streamed: input_json_delta as the input is generated
  }
  // thinking {type: "enabled", budget_tokens} asks for thinking blocks; without it Anthropic's
  // models do not think, so a template with the switch is told not to (and a model that thinks
  // anyway has its reasoning left out of the answer).
  Think think = Think::kOff;
  if (present(body, "thinking")) {
    const JsonBody& t = body["thinking"];
    const std::string type = t.is_object() && t.contains("type") && t["type"].is_string() ? t["type"].get<std::string>() : "";
    if (type == "enabled" || type == "adaptive") {
      think = Think::kOn;
    } else if (type != "disabled") {
      return bad_field("thinking must be {\"type\": \"enabled\", \"budget_tokens\": N} or {\"type\": \"disabled\"}", "thinking");
    }
  }
  if (auto e = map_think(think, model, w, "thinking", /*strict=*/true)) return std::move(*e);
  out.show_reasoning = think == Think::kOn;
  w["stream"] = true;
  return out;
}

std::string anthropic_message_start(const Generation& g) {
  json message = {{"id", "msg_" + g.id}, {"type", "message"}, {"role", "assistant"}, {"content", json::array()},
                  {"model", g.model}, {"stop_reason", nullptr}, {"stop_sequence", nullptr}, {"usage", usage_of(g, nullptr)}};
  return sse("message_start", {{"type", "message_start"}, {"message", std::move(message)}});
}

std::string anthropic_token_events(Generation& g, const proto::StreamEvent& ev) {
  if (ev.text.empty()) return {};
  AnswerPiece piece;
  split_answer(g, ev.text, /*end=*/false, piece);
  return block_events(g, piece);
}

std::string anthropic_final_events(Generation& g, const proto::StreamEvent& finished) {
  if (finished.reason == proto::FinishReason::kError) {
    const std::string message = g.error_message.empty() ? "generation failed" : g.error_message;
    return sse("error", {{"type", "error"}, {"error", {{"type", "api_error"}, {"message", message}}}});
  }
  AnswerPiece piece;
  split_answer(g, {}, /*end=*/true, piece);
  std::string out = block_events(g, piece);
  out += close_thinking(g);
  out += close_text_block(g);
  if (g.open_tool_block >= 0) {  // a call cut by max_tokens: its input stays partial
    out += sse("content_block_stop", {{"type", "content_block_stop"}, {"index", g.open_tool_block}});
    g.open_tool_block = -1;
  }
  json usage = usage_of(g, &finished);
  out += sse("message_delta", {{"type", "message_delta"},
                               {"delta", {{"stop_reason", stop_reason(finished.reason, g.tool_calls_sent)}, {"stop_sequence", nullptr}}},
                               {"usage", {{"output_tokens", usage["output_tokens"]}}}});
  return out + sse("message_stop", {{"type", "message_stop"}});
}

json anthropic_message(Generation& g, const proto::StreamEvent& finished) {
  AnswerPiece piece;
  split_answer(g, g.text, /*end=*/true, piece);
  const chat::ToolParse& parsed = piece.answer;
  json content = json::array();
  if (g.show_reasoning && !piece.reasoning.empty()) {
    content.push_back({{"type", "thinking"}, {"thinking", piece.reasoning}, {"signature", ""}});
  }
  if (!parsed.text.empty()) content.push_back({{"type", "text"}, {"text", parsed.text}});
  for (size_t i = 0; i < parsed.calls.size(); ++i) content.push_back(tool_use_block(g, parsed.calls[i], i));
  return {{"id", "msg_" + g.id}, {"type", "message"}, {"role", "assistant"}, {"content", std::move(content)},
          {"model", g.model}, {"stop_reason", stop_reason(finished.reason, parsed.calls.size())}, {"stop_sequence", nullptr},
          {"usage", usage_of(g, &finished)}};
}

}  // namespace vks::http
