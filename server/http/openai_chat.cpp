#include "server/http/openai_chat.h"

#include <array>
#include <string_view>

#include "server/http/answer_parse.h"
#include "server/http/choice_group.h"
#include "server/http/json_error.h"
#include "server/http/openai_api.h"
#include "server/http/tool_mapping.h"

namespace vks::http {

using nlohmann::json;

namespace {

bool has_value(const JsonBody& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && !it->is_null() && !(it->is_array() && it->empty()) && !(it->is_object() && it->empty());
}

// The roles a chat template knows. OpenAI's "developer" (the system prompt of its newer models)
// is rendered as "system": no open template knows "developer".
std::optional<std::string> template_role(const std::string& role) {
  static constexpr std::array<std::string_view, 4> kRoles = {"system", "user", "assistant", "tool"};
  if (role == "developer") return "system";
  for (std::string_view known : kRoles) {
    if (role == known) return role;
  }
  return std::nullopt;
}

// content: a string, null (an assistant turn), or text parts joined with "\n" (as vLLM does).
std::variant<std::string, ApiError> message_text(const JsonBody& message, const std::string& where, bool assistant) {
  const auto it = message.find("content");
  if (it == message.end() || it->is_null()) {
    if (assistant) return std::string();
    return bad_field(where + ".content is required", where + ".content", "missing_field");
  }
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) return bad_field(where + ".content must be a string or an array of text parts", where + ".content");
  std::string text;
  for (size_t i = 0; i < it->size(); ++i) {
    const JsonBody& part = (*it)[i];
    const std::string at = where + ".content." + std::to_string(i);
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return bad_field(at + " must be an object {\"type\": \"text\", \"text\": \"...\"}", at);
    }
    if (part["type"] != "text") {
      return bad_field(at + ": only text content parts are supported (not '" + part["type"].get<std::string>() + "')",
                 at + ".type");
    }
    if (!part.contains("text") || !part["text"].is_string()) return bad_field(at + ".text must be a string", at + ".text");
    if (i > 0) text += "\n";
    text += part["text"].get<std::string>();
  }
  return text;
}

std::variant<json, ApiError> wire_messages(const JsonBody& body) {
  const auto it = body.find("messages");
  if (it == body.end() || it->is_null()) return bad_field("messages is required", "messages", "missing_field");
  if (!it->is_array()) return bad_field("messages must be an array of {role, content}", "messages");
  if (it->empty()) return bad_field("messages must hold at least one message", "messages");
  json out = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const JsonBody& m = (*it)[i];
    const std::string where = "messages." + std::to_string(i);
    if (!m.is_object()) return bad_field(where + " must be an object {role, content}", where);
    if (!m.contains("role") || !m["role"].is_string()) return bad_field(where + ".role must be a string", where + ".role");
    const std::string role = m["role"].get<std::string>();
    const std::optional<std::string> rendered_role = template_role(role);
    if (!rendered_role) {
      return bad_field(where + ".role '" + role + "' is not one of system, developer, user, assistant, tool", where + ".role");
    }
    if (has_value(m, "function_call")) {
      return bad_field(where + ".function_call (the legacy functions API) is not supported; use tool_calls", where + ".function_call");
    }
    auto text = message_text(m, where, role == "assistant");
    if (auto* e = std::get_if<ApiError>(&text)) return std::move(*e);
    json turn = {{"role", *rendered_role}, {"content", std::move(std::get<std::string>(text))}};
    if (has_value(m, "tool_calls")) {
      if (role != "assistant") return bad_field(where + ".tool_calls: only assistant messages carry tool calls", where + ".tool_calls");
      auto calls = wire_tool_calls(m["tool_calls"], where + ".tool_calls");
      if (auto* e = std::get_if<ApiError>(&calls)) return std::move(*e);
      turn["tool_calls"] = std::move(std::get<std::string>(calls));
    }
    // The reasoning of an earlier answer, given back (reasoning_content, or the `reasoning` alias):
    // templates that think render it (Qwen3's, for the turns of the current tool loop).
    for (const char* key : {"reasoning_content", "reasoning"}) {
      auto r = m.find(key);
      if (r == m.end() || r->is_null()) continue;
      if (!r->is_string()) return bad_field(where + "." + key + " must be a string", where + "." + key);
      if (role != "assistant") return bad_field(where + "." + key + ": only assistant messages carry reasoning", where + "." + key);
      if (!r->get<std::string>().empty()) turn["reasoning_content"] = r->get<std::string>();
      break;
    }
    if (role == "tool") {
      if (auto id = m.find("tool_call_id"); id != m.end() && !id->is_null()) {
        if (!id->is_string()) return bad_field(where + ".tool_call_id must be a string", where + ".tool_call_id");
        turn["tool_call_id"] = id->get<std::string>();
      }
    }
    if (auto name = m.find("name"); name != m.end() && name->is_string() && !name->get<std::string>().empty()) {
      turn["name"] = name->get<std::string>();
    }
    out.push_back(std::move(turn));
  }
  return out;
}

json chat_chunk_base(const Generation& g) { return openai_chunk_base(g); }

json with_bytes(json entry, const std::string& piece) {
  json bytes = json::array();
  for (unsigned char ch : piece) bytes.push_back(ch);
  entry["bytes"] = std::move(bytes);
  return entry;
}

// The chat logprobs entries of one token event: {token, logprob, bytes, top_logprobs: [...]}.
json logprob_entries(const proto::StreamEvent& ev, const TokenText& token_text, int32_t top_n) {
  json entries = json::array();
  for (const proto::GeneratedToken& t : ev.logprobs) {
    const std::string piece = token_text(t.id);
    json top = json::array();
    for (size_t i = 0; i < t.top.size() && static_cast<int32_t>(i) < top_n; ++i) {
      const std::string alt = token_text(t.top[i].id);
      top.push_back(with_bytes({{"token", alt}, {"logprob", t.top[i].logprob}}, alt));
    }
    json entry = with_bytes({{"token", piece}, {"logprob", t.logprob}}, piece);
    entry["top_logprobs"] = std::move(top);
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::string event(const json& chunk) { return "data: " + compact_dump(chunk) + "\n\n"; }

}  // namespace

json openai_chat_usage(const Generation& g, const proto::StreamEvent& finished) {
  json usage = openai_usage(finished, g.prompt_tokens);
  if (g.reasoning) usage["completion_tokens_details"] = {{"reasoning_tokens", g.reasoning_tokens}};
  return usage;
}

std::variant<OpenAiChatRequest, ApiError> map_openai_chat(const JsonBody& body, const ModelCatalogue& model) {
  OpenAiChatRequest out;
  json& w = out.wire;
  w = json::object();
  if (auto e = map_openai_common(body, model, w, out.stream, out.include_usage)) return std::move(*e);
  if (auto e = read_choice_count(body, out.n)) return std::move(*e);
  auto messages = wire_messages(body);
  if (auto* e = std::get_if<ApiError>(&messages)) return std::move(*e);
  w["messages"] = std::move(std::get<json>(messages));
  if (has_value(body, "functions")) {
    return bad_field("functions (the legacy functions API) is not supported; use tools", "functions");
  }
  bool offered = false;
  if (auto e = map_tools(body, w, offered)) return std::move(*e);
  if (offered) {
    out.tools.emplace(model.tool_format);
    out.tools->stream_arguments(out.stream);  // streamed: arguments in fragments, as OpenAI sends them
  }
  // Thinking: reasoning_effort ("none" turns it off, as OpenAI's), chat_template_kwargs (llama.cpp's
  // and vLLM's) over it. A model that does not think ignores both, as llama.cpp's server does.
  Think think = Think::kUnset;
  if (auto it = body.find("reasoning_effort"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return bad_field("reasoning_effort must be a string (none, minimal, low, medium, high)", "reasoning_effort");
    think = *it == "none" ? Think::kOff : Think::kOn;
  }
  if (auto e = read_template_kwargs(body, think)) return std::move(*e);
  if (auto e = map_think(think, model, w, "reasoning_effort", /*strict=*/false)) return std::move(*e);
  if (auto it = body.find("modalities"); it != body.end() && !it->is_null() && *it != JsonBody::array({"text"})) {
    return bad_field("only the text modality is supported", "modalities");
  }
  bool logprobs = false;
  if (auto it = body.find("logprobs"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return bad_field("logprobs must be a boolean", "logprobs");
    logprobs = it->get<bool>();
  }
  if (auto it = body.find("top_logprobs"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 20) {
      return bad_field("top_logprobs must be an integer 0..20", "top_logprobs");
    }
    if (!logprobs) return bad_field("top_logprobs requires logprobs: true", "top_logprobs");
    out.logprobs = static_cast<int32_t>(it->get<int64_t>());
  } else if (logprobs) {
    out.logprobs = 0;
  }
  if (out.logprobs >= 0) w["logprobs"] = out.logprobs;
  // vkstream's own (vLLM's names): a template for this request; false = no assistant header at the end.
  copy_field(body, "chat_template", w, "chat_template");
  copy_field(body, "add_generation_prompt", w, "add_generation_prompt");
  return out;
}

const std::map<std::string, std::string>& openai_chat_param_names() {
  static const std::map<std::string, std::string> names = [] {
    std::map<std::string, std::string> n = openai_param_names();
    n["prompt"] = "messages";  // a conversation too long once rendered
    n["prompt_ids"] = "messages";
    n["tool_name"] = "tool_choice";  // the named function of tool_choice
    return n;
  }();
  return names;
}

std::string openai_chat_first_chunk(const Generation& g) {
  json chunk = chat_chunk_base(g);
  chunk["choices"] = json::array(
      {{{"index", g.choice}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
  if (g.include_usage) chunk["usage"] = nullptr;
  return event(chunk);
}

void openai_chat_accumulate(Generation& g, const proto::StreamEvent& ev, const TokenText& token_text) {
  g.text += ev.text;
  if (g.logprobs < 0) return;
  if (g.logprobs_acc.is_null()) g.logprobs_acc = {{"content", json::array()}};
  for (json& entry : logprob_entries(ev, token_text, g.logprobs)) g.logprobs_acc["content"].push_back(std::move(entry));
}

namespace {

std::string delta_chunk(const Generation& g, json delta, json logprobs) {
  json chunk = chat_chunk_base(g);
  chunk["choices"] = json::array(
      {{{"index", g.choice}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)}, {"finish_reason", nullptr}}});
  if (g.include_usage) chunk["usage"] = nullptr;
  return event(chunk);
}

// A fragment of a call in progress: the first with its index, id, type and name, the others with
// its index and the next piece of its arguments (OpenAI's streamed tool_calls).
json fragment_delta(const Generation& g, const chat::ToolCallFragment& f) {
  json call = {{"index", f.index}};
  if (!f.name.empty()) {
    call["id"] = tool_call_id(g.id, f.index);
    call["type"] = "function";
    call["function"] = {{"name", f.name}, {"arguments", f.arguments}};
  } else {
    call["function"] = {{"arguments", f.arguments}};
  }
  return {{"tool_calls", json::array({std::move(call)})}};
}

// What the parsers settled: a reasoning delta (reasoning_content, llama.cpp's and DeepSeek's
// name), a content delta, the fragments of calls in progress, then one delta per completed call
// that was not sent in fragments.
std::string parsed_chunks(Generation& g, const AnswerPiece& piece, json logprobs) {
  std::string out;
  if (!piece.reasoning.empty()) out += delta_chunk(g, {{"reasoning_content", piece.reasoning}}, nullptr);
  const chat::ToolParse& parsed = piece.answer;
  if (!parsed.text.empty() || !logprobs.is_null()) out += delta_chunk(g, {{"content", parsed.text}}, std::move(logprobs));
  each_call_event(
      parsed, g.tool_calls_sent, [&](const chat::ToolCallFragment& f) { out += delta_chunk(g, fragment_delta(g, f), nullptr); },
      [&](const chat::ToolCall& call, size_t index) {
        if (call.streamed) return;  // its fragments said it all
        out += delta_chunk(g, {{"tool_calls", json::array({openai_tool_call(call, g.id, index, /*streamed=*/true)})}}, nullptr);
      });
  return out;
}

}  // namespace

std::string openai_chat_token_chunk(Generation& g, const proto::StreamEvent& ev, const TokenText& token_text) {
  if (ev.text.empty() && (g.logprobs < 0 || ev.ids.empty())) return {};
  json logprobs = nullptr;
  if (g.logprobs >= 0) logprobs = {{"content", logprob_entries(ev, token_text, g.logprobs)}};
  if (g.tools || g.reasoning) {
    AnswerPiece piece;
    split_answer(g, ev.text, /*end=*/false, piece);
    return parsed_chunks(g, piece, std::move(logprobs));
  }
  return delta_chunk(g, {{"content", ev.text}}, std::move(logprobs));
}

std::string openai_chat_finish_reason(proto::FinishReason reason, size_t calls) {
  // A turn that called tools ends with "tool_calls" (unless cut by the length bound).
  if (calls > 0 && reason == proto::FinishReason::kStop) return "tool_calls";
  return finish_reason_text(reason);
}

std::string openai_chat_final_chunks(Generation& g, const proto::StreamEvent& finished) {
  if (finished.reason == proto::FinishReason::kError) return openai_failed_stream_end(g.error_message);
  std::string out = openai_chat_choice_end_chunks(g, finished);
  return out + openai_answer_end_chunks(g, openai_chat_usage(g, finished));
}

std::string openai_chat_choice_end_chunks(Generation& g, const proto::StreamEvent& finished) {
  std::string out;
  if (g.tools || g.reasoning) {
    AnswerPiece piece;
    split_answer(g, {}, /*end=*/true, piece);
    out += parsed_chunks(g, piece, nullptr);
  }
  json chunk = chat_chunk_base(g);
  chunk["choices"] = json::array({{{"index", g.choice},
                                   {"delta", json::object()},
                                   {"logprobs", nullptr},
                                   {"finish_reason", openai_chat_finish_reason(finished.reason, g.tool_calls_sent)}}});
  if (g.include_usage) chunk["usage"] = nullptr;
  return out + event(chunk);
}

json openai_chat_completion(Generation& g, const proto::StreamEvent& finished) {
  json answer = {{"id", "chatcmpl-" + g.answer_id()}, {"object", "chat.completion"}, {"created", g.created_unix}, {"model", g.model}};
  json logprobs = nullptr;
  if (g.logprobs >= 0) logprobs = g.logprobs_acc.is_null() ? json{{"content", json::array()}} : g.logprobs_acc;
  json message = {{"role", "assistant"}, {"content", g.text}, {"refusal", nullptr}};
  size_t calls = 0;
  if (g.tools || g.reasoning) {  // the whole answer at once parses exactly as the streamed pieces would
    AnswerPiece piece;
    split_answer(g, g.text, /*end=*/true, piece);
    if (!piece.reasoning.empty()) message["reasoning_content"] = piece.reasoning;
    const chat::ToolParse& parsed = piece.answer;
    calls = parsed.calls.size();
    if (calls > 0) {
      message["content"] = parsed.text.empty() ? json(nullptr) : json(parsed.text);
      json list = json::array();
      for (size_t i = 0; i < calls; ++i) list.push_back(openai_tool_call(parsed.calls[i], g.id, i, /*streamed=*/false));
      message["tool_calls"] = std::move(list);
    } else {
      message["content"] = parsed.text;
    }
  }
  answer["choices"] = json::array({{{"index", g.choice},
                                    {"message", std::move(message)},
                                    {"logprobs", std::move(logprobs)},
                                    {"finish_reason", openai_chat_finish_reason(finished.reason, calls)}}});
  answer["usage"] = openai_chat_usage(g, finished);
  return answer;
}

}  // namespace vks::http
