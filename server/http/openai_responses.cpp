#include "server/http/openai_responses.h"

#include "server/http/answer_parse.h"
#include "server/http/openai_api.h"
#include "server/http/tool_mapping.h"

namespace vks::http {

using nlohmann::json;

namespace {

bool given(const JsonBody& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

std::string dump_json(const JsonBody& j) { return j.dump(-1, ' ', false, JsonBody::error_handler_t::replace); }

// A message item's content: a string, or input_text / output_text / text parts joined with "\n".
std::variant<std::string, ApiError> item_text(const JsonBody& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return bad_field(where + " must be a string or an array of text parts", where);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const JsonBody& part = content[i];
    const std::string at = where + "." + std::to_string(i);
    const std::string type = part.is_object() && part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
    if ((type != "input_text" && type != "output_text" && type != "text") || !part.contains("text") || !part["text"].is_string()) {
      return bad_field(at + ": only text parts (input_text, output_text) are supported", at);
    }
    if (!text.empty()) text += "\n";
    text += part["text"].get<std::string>();
  }
  return text;
}

std::optional<ApiError> add_input(const JsonBody& input, json& turns) {
  if (input.is_string()) {
    turns.push_back({{"role", "user"}, {"content", input.get<std::string>()}});
    return std::nullopt;
  }
  if (!input.is_array()) return bad_field("input must be a string or an array of items", "input");
  JsonBody pending_calls = JsonBody::array();  // consecutive function_call items: one assistant turn
  std::string pending_reasoning;               // a reasoning item's text: the next assistant turn's
  auto with_reasoning = [&](json turn) {
    if (!pending_reasoning.empty()) turn["reasoning_content"] = std::move(pending_reasoning);
    pending_reasoning.clear();
    return turn;
  };
  auto flush_calls = [&]() -> std::optional<ApiError> {
    if (pending_calls.empty()) return std::nullopt;
    auto calls = wire_tool_calls(pending_calls, "input");
    if (auto* e = std::get_if<ApiError>(&calls)) return std::move(*e);
    turns.push_back(with_reasoning({{"role", "assistant"}, {"content", ""}, {"tool_calls", std::move(std::get<std::string>(calls))}}));
    pending_calls = JsonBody::array();
    return std::nullopt;
  };
  for (size_t i = 0; i < input.size(); ++i) {
    const JsonBody& item = input[i];
    const std::string at = "input." + std::to_string(i);
    if (!item.is_object()) return bad_field(at + " must be an object", at);
    const std::string type = item.contains("type") && item["type"].is_string() ? item["type"].get<std::string>() : "message";
    if (type == "function_call") {
      if (!item.contains("name") || !item["name"].is_string()) return bad_field(at + ".name must be a string", at + ".name");
      auto call_id = optional_string(item, "call_id", at);
      if (auto* e = std::get_if<ApiError>(&call_id)) return std::move(*e);
      pending_calls.push_back({{"id", std::move(std::get<std::string>(call_id))},
                               {"type", "function"},
                               {"function", {{"name", item["name"]}, {"arguments", item.contains("arguments") ? item["arguments"] : JsonBody("{}")}}}});
      continue;
    }
    if (type == "reasoning") {
      // Earlier reasoning, given back: its text (reasoning_text content, else the summary) goes
      // with the assistant turn that follows. Encrypted reasoning has no text and is dropped.
      for (const char* key : {"content", "summary"}) {
        if (!given(item, key) || !item[key].is_array()) continue;
        for (const JsonBody& part : item[key]) {
          if (part.is_object() && part.contains("text") && part["text"].is_string()) {
            if (!pending_reasoning.empty()) pending_reasoning += "\n";
            pending_reasoning += part["text"].get<std::string>();
          }
        }
        if (!pending_reasoning.empty()) break;
      }
      continue;
    }
    if (auto e = flush_calls()) return e;
    if (type == "function_call_output") {
      std::string output;
      if (given(item, "output")) {
        if (item["output"].is_string()) {
          output = item["output"].get<std::string>();
        } else {
          auto t = item_text(item["output"], at + ".output");
          if (auto* e = std::get_if<ApiError>(&t)) return std::move(*e);
          output = std::get<std::string>(t);
        }
      }
      auto call_id = optional_string(item, "call_id", at);
      if (auto* e = std::get_if<ApiError>(&call_id)) return std::move(*e);
      turns.push_back({{"role", "tool"}, {"content", output}, {"tool_call_id", std::move(std::get<std::string>(call_id))}});
    } else if (type == "message") {
      const std::string role = item.contains("role") && item["role"].is_string() ? item["role"].get<std::string>() : "";
      if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
        return bad_field(at + ".role must be user, assistant, system or developer", at + ".role");
      }
      if (!given(item, "content")) return bad_field(at + ".content is required", at + ".content");
      auto t = item_text(item["content"], at + ".content");
      if (auto* e = std::get_if<ApiError>(&t)) return std::move(*e);
      json turn = {{"role", role == "developer" ? "system" : role}, {"content", std::get<std::string>(t)}};
      turns.push_back(role == "assistant" ? with_reasoning(std::move(turn)) : std::move(turn));
    } else {
      return bad_field(at + ": input items of type '" + type + "' are not supported", at + ".type");
    }
  }
  return flush_calls();
}

// Responses' flat tools [{type: function, name, description, parameters}] and tool_choice in the
// chat shape, for map_tools.
std::variant<JsonBody, ApiError> chat_tools(const JsonBody& body) {
  JsonBody out = JsonBody::object();
  if (given(body, "tools")) {
    if (!body["tools"].is_array()) return bad_field("tools must be an array", "tools");
    JsonBody list = JsonBody::array();
    for (size_t i = 0; i < body["tools"].size(); ++i) {
      const JsonBody& t = body["tools"][i];
      const std::string at = "tools." + std::to_string(i);
      if (!t.is_object() || !t.contains("type") || t["type"] != "function") {
        return bad_field(at + ": only function tools are supported", at + ".type");
      }
      JsonBody fn = JsonBody::object();
      for (const char* key : {"name", "description", "parameters"}) {
        if (given(t, key)) fn[key] = t[key];
      }
      list.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    out["tools"] = std::move(list);
  }
  if (given(body, "tool_choice")) {
    const JsonBody& c = body["tool_choice"];
    if (c.is_object() && c.contains("type") && c["type"] == "function" && c.contains("name")) {
      out["tool_choice"] = {{"type", "function"}, {"function", {{"name", c["name"]}}}};
    } else {
      out["tool_choice"] = c;
    }
  }
  if (given(body, "parallel_tool_calls")) out["parallel_tool_calls"] = body["parallel_tool_calls"];
  return out;
}

std::string event(Generation& g, const char* type, json data) {
  data["type"] = type;
  data["sequence_number"] = g.sequence++;
  return std::string("event: ") + type + "\ndata: " + compact_dump(data) + "\n\n";
}

std::string message_id(const Generation& g, int32_t index) { return "msg_" + g.id + "_" + std::to_string(index); }

json message_item(const Generation& g, int32_t index, const std::string& text, const char* status) {
  return {{"type", "message"}, {"id", message_id(g, index)}, {"status", status}, {"role", "assistant"},
          {"content", text.empty() && std::string(status) == "in_progress"
                          ? json::array()
                          : json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
}

std::string call_item_id(const Generation& g, size_t index) { return "fc_" + g.id + "_" + std::to_string(index); }

json call_item(const Generation& g, const std::string& name, const std::string& arguments, size_t index, const char* status) {
  return {{"type", "function_call"}, {"id", call_item_id(g, index)}, {"call_id", tool_call_id(g.id, index)}, {"name", name},
          {"arguments", arguments}, {"status", status}};
}

json response_base(const Generation& g, const char* status) {
  json r = {{"id", "resp_" + g.id}, {"object", "response"}, {"created_at", g.created_unix}, {"status", status},
            {"model", g.model}, {"output", json::array()}, {"error", nullptr}, {"incomplete_details", nullptr},
            {"parallel_tool_calls", true}, {"tool_choice", "auto"}, {"tools", json::array()},
            {"text", {{"format", {{"type", "text"}}}}}, {"usage", nullptr}};
  // What the request set, as OpenAI repeats it (clients read tool_choice and text.format back).
  if (g.echo.is_object()) {
    for (const auto& [key, value] : g.echo.items()) r[key] = value;
  }
  return r;
}

// The request's settings that a response object repeats, as sent.
json request_echo(const JsonBody& body) {
  json echo = json::object();
  for (const char* key : {"instructions", "max_output_tokens", "parallel_tool_calls", "temperature", "text", "tool_choice",
                          "tools", "top_p", "metadata"}) {
    if (given(body, key)) echo[key] = json::parse(dump_json(body[key]));
  }
  return echo;
}

json finished_response(const Generation& g, const proto::StreamEvent& finished, json output) {
  const bool cut = finished.reason == proto::FinishReason::kLength;
  json r = response_base(g, cut ? "incomplete" : "completed");
  if (cut) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  r["output"] = std::move(output);
  const json usage = openai_usage(finished, g.prompt_tokens);
  r["usage"] = {{"input_tokens", usage["prompt_tokens"]},
                {"input_tokens_details", {{"cached_tokens", finished.usage.cached_tokens}}},
                {"output_tokens", usage["completion_tokens"]},
                {"output_tokens_details", {{"reasoning_tokens", g.reasoning_tokens}}},
                {"total_tokens", usage["total_tokens"]}};
  return r;
}

std::string reasoning_id(const Generation& g, int32_t index) { return "rs_" + g.id + "_" + std::to_string(index); }

// A reasoning item with the model's own reasoning text (open models show it; there is nothing to
// summarize or encrypt).
json reasoning_item(const Generation& g, int32_t index, const std::string& text, const char* status) {
  json content = std::string(status) == "in_progress" ? json::array() : json::array({{{"type", "reasoning_text"}, {"text", text}}});
  return {{"type", "reasoning"}, {"id", reasoning_id(g, index)}, {"summary", json::array()}, {"content", std::move(content)},
          {"status", status}};
}

std::string close_reasoning(Generation& g) {
  if (g.reasoning_block < 0) return {};
  const int32_t index = g.reasoning_block;
  g.reasoning_block = -1;
  const std::string id = reasoning_id(g, index);
  std::string out = event(g, "response.reasoning_text.done",
                          {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", g.reasoning_text}});
  out += event(g, "response.content_part.done", {{"item_id", id}, {"output_index", index}, {"content_index", 0},
                                                 {"part", {{"type", "reasoning_text"}, {"text", g.reasoning_text}}}});
  json item = reasoning_item(g, index, g.reasoning_text, "completed");
  g.logprobs_acc.push_back(item);
  out += event(g, "response.output_item.done", {{"output_index", index}, {"item", std::move(item)}});
  return out;
}

// Closes the open message item (text done, part done, item done).
std::string close_message(Generation& g) {
  if (g.open_text_block < 0) return {};
  const int32_t index = g.open_text_block;
  g.open_text_block = -1;
  const std::string id = message_id(g, index);
  const json part = {{"type", "output_text"}, {"text", g.text}, {"annotations", json::array()}};
  std::string out = event(g, "response.output_text.done", {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", g.text}});
  out += event(g, "response.content_part.done", {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", part}});
  json item = message_item(g, index, g.text, "completed");
  g.logprobs_acc.push_back(item);  // the output so far (logprobs are not offered here)
  out += event(g, "response.output_item.done", {{"output_index", index}, {"item", std::move(item)}});
  return out;
}

// Opens a function_call item (its arguments come as deltas).
std::string open_call(Generation& g, const std::string& name, size_t index) {
  std::string out = close_message(g);
  g.open_tool_block = g.blocks++;
  g.open_call_name = name;
  g.open_call_arguments.clear();
  return out + event(g, "response.output_item.added",
                     {{"output_index", g.open_tool_block}, {"item", call_item(g, name, "", index, "in_progress")}});
}

std::string call_arguments_delta(Generation& g, const std::string& delta) {
  if (delta.empty()) return {};
  g.open_call_arguments += delta;
  return event(g, "response.function_call_arguments.delta", {{"item_id", call_item_id(g, g.tool_calls_sent)},
                                                             {"output_index", g.open_tool_block}, {"delta", delta}});
}

// Closes the open function_call item (arguments done, item done): "completed" when the call ended,
// "incomplete" when the answer was cut inside it.
std::string close_call(Generation& g, size_t index, const char* status) {
  if (g.open_tool_block < 0) return {};
  const int32_t output_index = g.open_tool_block;
  g.open_tool_block = -1;
  std::string out = event(g, "response.function_call_arguments.done",
                          {{"item_id", call_item_id(g, index)}, {"output_index", output_index}, {"arguments", g.open_call_arguments}});
  json item = call_item(g, g.open_call_name, g.open_call_arguments, index, status);
  g.logprobs_acc.push_back(item);
  return out + event(g, "response.output_item.done", {{"output_index", output_index}, {"item", std::move(item)}});
}

std::string parsed_events(Generation& g, const AnswerPiece& piece) {
  std::string out;
  const chat::ToolParse& parsed = piece.answer;
  if (!piece.reasoning.empty()) {  // the reasoning block comes first: no other item is open
    if (g.reasoning_block < 0) {
      g.reasoning_block = g.blocks++;
      g.reasoning_text.clear();
      out += event(g, "response.output_item.added",
                   {{"output_index", g.reasoning_block}, {"item", reasoning_item(g, g.reasoning_block, "", "in_progress")}});
      out += event(g, "response.content_part.added",
                   {{"item_id", reasoning_id(g, g.reasoning_block)}, {"output_index", g.reasoning_block}, {"content_index", 0},
                    {"part", {{"type", "reasoning_text"}, {"text", ""}}}});
    }
    g.reasoning_text += piece.reasoning;
    out += event(g, "response.reasoning_text.delta", {{"item_id", reasoning_id(g, g.reasoning_block)}, {"output_index", g.reasoning_block},
                                                      {"content_index", 0}, {"delta", piece.reasoning}});
  }
  if (!parsed.text.empty() || !parsed.calls.empty() || !parsed.fragments.empty()) out += close_reasoning(g);
  if (!parsed.text.empty()) {
    if (g.open_text_block < 0) {  // a message item opens (text after a call opens another)
      g.open_text_block = g.blocks++;
      g.text.clear();  // the open item's text
      out += event(g, "response.output_item.added",
                   {{"output_index", g.open_text_block}, {"item", message_item(g, g.open_text_block, "", "in_progress")}});
      out += event(g, "response.content_part.added",
                   {{"item_id", message_id(g, g.open_text_block)}, {"output_index", g.open_text_block}, {"content_index", 0},
                    {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
    }
    g.text += parsed.text;
    out += event(g, "response.output_text.delta",
                 {{"item_id", message_id(g, g.open_text_block)}, {"output_index", g.open_text_block}, {"content_index", 0},
                  {"delta", parsed.text}});
  }
  // A call's item opens when its name is known, its arguments stream as the model writes them
  // (fragments), and it closes when the call ends; a call that was not streamed comes whole.
  each_call_event(
      parsed, g.tool_calls_sent,
      [&](const chat::ToolCallFragment& f) {
        if (!f.name.empty()) out += open_call(g, f.name, f.index);
        out += call_arguments_delta(g, f.arguments);
      },
      [&](const chat::ToolCall& call, size_t index) {
        if (!call.streamed) {
          out += open_call(g, call.name, index);
          g.open_call_arguments = call.arguments;
          out += event(g, "response.function_call_arguments.delta",
                       {{"item_id", call_item_id(g, index)}, {"output_index", g.open_tool_block}, {"delta", call.arguments}});
        }
        out += close_call(g, index, "completed");
      });
  return out;
}

}  // namespace

const std::map<std::string, std::string>& openai_responses_param_names() {
  static const std::map<std::string, std::string> names = {{"max_tokens", "max_output_tokens"}, {"prompt", "input"},
                                                           {"prompt_ids", "input"}, {"messages", "input"},
                                                           {"json_schema", "text.format"}, {"tool_name", "tool_choice"}};
  return names;
}

std::variant<OpenAiResponsesRequest, ApiError> map_openai_responses(const JsonBody& body, const ModelCatalogue& model) {
  OpenAiResponsesRequest out;
  json& w = out.wire;
  w = json::object();
  if (given(body, "model")) {
    if (!body["model"].is_string()) return bad_field("model must be a string", "model");
    if (!model.matches(body["model"].get<std::string>())) {
      return ApiError{404, "The model '" + body["model"].get<std::string>() + "' does not exist; this server serves '" + model.id + "'",
                      "model_not_found", "model", 0};
    }
  }
  if (given(body, "previous_response_id")) {
    return bad_field("previous_response_id is not supported: this server keeps no responses; send the whole input", "previous_response_id");
  }
  copy_field(body, "max_output_tokens", w, "max_tokens");
  copy_field(body, "temperature", w, "temperature");
  copy_field(body, "top_p", w, "top_p");
  if (given(body, "stream")) {
    if (!body["stream"].is_boolean()) return bad_field("stream must be a boolean", "stream");
    out.stream = body["stream"].get<bool>();
  }
  json turns = json::array();
  if (given(body, "instructions")) {
    if (!body["instructions"].is_string()) return bad_field("instructions must be a string", "instructions");
    turns.push_back({{"role", "system"}, {"content", body["instructions"].get<std::string>()}});
  }
  if (!given(body, "input")) return bad_field("input is required", "input", "missing_field");
  if (auto e = add_input(body["input"], turns)) return std::move(*e);
  if (turns.empty()) return bad_field("input must not be empty", "input");
  w["messages"] = std::move(turns);
  if (given(body, "text") && body["text"].is_object() && given(body["text"], "format")) {
    const JsonBody& f = body["text"]["format"];
    const std::string type = f.is_object() && f.contains("type") && f["type"].is_string() ? f["type"].get<std::string>() : "";
    if (type == "json_schema" && f.contains("schema") && (f["schema"].is_object() || f["schema"].is_boolean())) {
      w["json_schema"] = dump_json(f["schema"]);  // declared property order kept
    } else if (type == "json_object") {
      w["json_schema"] = R"({"type":"object"})";
    } else if (type != "text") {
      return bad_field("text.format must be {\"type\": \"text\" | \"json_object\" | \"json_schema\", \"schema\": {...}}", "text.format");
    }
  }
  auto tools = chat_tools(body);
  if (auto* e = std::get_if<ApiError>(&tools)) return std::move(*e);
  bool offered = false;
  if (auto e = map_tools(std::get<JsonBody>(tools), w, offered)) return std::move(*e);
  if (offered) {
    out.tools.emplace(model.tool_format);
    out.tools->stream_arguments(out.stream);  // streamed: function_call_arguments.delta as they are generated
  }
  // reasoning.effort: "none" switches a thinking template off; any other effort switches it on.
  Think think = Think::kUnset;
  if (given(body, "reasoning")) {
    const JsonBody& r = body["reasoning"];
    if (!r.is_object()) return bad_field("reasoning must be an object {\"effort\": ...}", "reasoning");
    if (given(r, "effort")) {
      if (!r["effort"].is_string()) return bad_field("reasoning.effort must be a string", "reasoning.effort");
      think = r["effort"] == "none" ? Think::kOff : Think::kOn;
    }
  }
  if (auto e = map_think(think, model, w, "reasoning", /*strict=*/false)) return std::move(*e);
  out.echo = request_echo(body);
  w["stream"] = true;
  return out;
}

std::string responses_created_event(Generation& g) {
  g.logprobs_acc = json::array();
  g.text.clear();
  std::string out = event(g, "response.created", {{"response", response_base(g, "in_progress")}});
  return out + event(g, "response.in_progress", {{"response", response_base(g, "in_progress")}});
}

std::string responses_token_events(Generation& g, const proto::StreamEvent& ev) {
  if (ev.text.empty()) return {};
  AnswerPiece piece;
  split_answer(g, ev.text, /*end=*/false, piece);
  return parsed_events(g, piece);
}

std::string responses_final_events(Generation& g, const proto::StreamEvent& finished) {
  if (finished.reason == proto::FinishReason::kError) {
    const std::string message = g.error_message.empty() ? "generation failed" : g.error_message;
    json failed = response_base(g, "failed");
    failed["error"] = {{"code", "server_error"}, {"message", message}};
    return event(g, "response.failed", {{"response", std::move(failed)}});
  }
  AnswerPiece piece;
  split_answer(g, {}, /*end=*/true, piece);
  std::string out = parsed_events(g, piece);
  out += close_reasoning(g);
  out += close_message(g);
  out += close_call(g, g.tool_calls_sent, "incomplete");  // a call cut by max_output_tokens: its arguments stay partial
  json items = g.logprobs_acc.is_array() ? g.logprobs_acc : json::array();
  const char* type = finished.reason == proto::FinishReason::kLength ? "response.incomplete" : "response.completed";
  return out + event(g, type, {{"response", finished_response(g, finished, std::move(items))}});
}

json responses_object(Generation& g, const proto::StreamEvent& finished) {
  AnswerPiece piece;
  split_answer(g, g.text, /*end=*/true, piece);
  const chat::ToolParse& parsed = piece.answer;
  json output = json::array();
  // Item indexes as the stream numbers them: reasoning, then the message, then the calls.
  int32_t index = 0;
  if (!piece.reasoning.empty()) output.push_back(reasoning_item(g, index++, piece.reasoning, "completed"));
  if (!parsed.text.empty()) output.push_back(message_item(g, index++, parsed.text, "completed"));
  for (size_t i = 0; i < parsed.calls.size(); ++i) {
    output.push_back(call_item(g, parsed.calls[i].name, parsed.calls[i].arguments, i, "completed"));
  }
  return finished_response(g, finished, std::move(output));
}

}  // namespace vks::http
