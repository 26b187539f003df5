#include "server/http/ollama_chat.h"

#include <array>
#include <string_view>

#include "server/http/answer_parse.h"
#include "server/http/ollama_api.h"
#include "server/http/tool_mapping.h"

namespace vks::http {

using nlohmann::json;

namespace {

bool has_content(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && !it->is_null() && !(it->is_array() && it->empty()) &&
         !(it->is_string() && it->get<std::string>().empty());
}

bool known_role(const std::string& role) {
  static constexpr std::array<std::string_view, 4> kRoles = {"system", "user", "assistant", "tool"};
  for (std::string_view known : kRoles) {
    if (role == known) return true;
  }
  return false;
}

json assistant_message(std::string content) { return {{"role", "assistant"}, {"content", std::move(content)}}; }

}  // namespace

const std::map<std::string, std::string>& ollama_chat_param_names() {
  static const std::map<std::string, std::string> names = [] {
    std::map<std::string, std::string> n = ollama_param_names();
    n["prompt"] = "messages";  // a conversation too long once rendered
    n["prompt_ids"] = "messages";
    n["tool_name"] = "tool_choice";  // the named function of tool_choice
    return n;
  }();
  return names;
}

std::variant<OllamaChatRequest, ApiError> map_ollama_chat(const JsonBody& body, const ModelCatalogue& model) {
  OllamaChatRequest out;
  json& w = out.wire;
  w = json::object();
  if (auto e = map_ollama_common(body, model, w, out.stream)) return std::move(*e);
  bool offered = false;  // tools, and tool_choice / parallel_tool_calls as extensions (Ollama has none)
  if (auto e = map_tools(body, w, offered)) return std::move(*e);
  if (offered) out.tools.emplace(model.tool_format);
  // think: true / false, or gpt-oss's "low" | "medium" | "high". As Ollama does, asking a model
  // that does not think is an error; false switches the template's thinking off where it can
  // and hides what is thought anyway.
  Think think = Think::kUnset;
  if (auto t = body.find("think"); t != body.end() && !t->is_null()) {
    if (t->is_boolean()) {
      think = t->get<bool>() ? Think::kOn : Think::kOff;
    } else if (t->is_string() && (*t == "low" || *t == "medium" || *t == "high")) {
      think = Think::kOn;
    } else {
      return bad_field("think must be a boolean or \"low\", \"medium\", \"high\"", "think");
    }
  }
  if (auto e = map_think(think, model, w, "think", /*strict=*/true)) return std::move(*e);
  out.show_reasoning = think != Think::kOff;
  const auto it = body.find("messages");
  if (it == body.end() || it->is_null() || (it->is_array() && it->empty())) {
    out.load_only = true;
    return out;
  }
  if (!it->is_array()) return bad_field("messages must be an array of {role, content}", "messages");
  json messages = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const JsonBody& m = (*it)[i];
    const std::string where = "messages." + std::to_string(i);
    if (!m.is_object()) return bad_field(where + " must be an object {role, content}", where);
    if (!m.contains("role") || !m["role"].is_string()) return bad_field(where + ".role must be a string", where + ".role");
    const std::string role = m["role"].get<std::string>();
    if (!known_role(role)) return bad_field(where + ".role '" + role + "' is not one of system, user, assistant, tool", where + ".role");
    if (has_content(m, "images")) return bad_field(where + ".images: images are not supported by this server", where + ".images");
    std::string content;
    if (auto c = m.find("content"); c != m.end() && !c->is_null()) {
      if (!c->is_string()) return bad_field(where + ".content must be a string", where + ".content");
      content = c->get<std::string>();
    }
    json turn = {{"role", role}, {"content", std::move(content)}};
    if (has_content(m, "tool_calls")) {
      if (role != "assistant") return bad_field(where + ".tool_calls: only assistant messages carry tool calls", where + ".tool_calls");
      auto calls = wire_tool_calls(m["tool_calls"], where + ".tool_calls");
      if (auto* e = std::get_if<ApiError>(&calls)) return std::move(*e);
      turn["tool_calls"] = std::move(std::get<std::string>(calls));
    }
    if (auto t = m.find("thinking"); t != m.end() && !t->is_null()) {  // an earlier answer's thinking, given back
      if (!t->is_string()) return bad_field(where + ".thinking must be a string", where + ".thinking");
      if (role == "assistant" && !t->get<std::string>().empty()) turn["reasoning_content"] = t->get<std::string>();
    }
    for (const char* key : {"tool_name", "name"}) {  // a tool result's function (Ollama: tool_name)
      if (auto n = m.find(key); n != m.end() && n->is_string() && !n->get<std::string>().empty()) {
        turn["name"] = n->get<std::string>();
        break;
      }
    }
    messages.push_back(std::move(turn));
  }
  w["messages"] = std::move(messages);
  return out;
}

namespace {

json parsed_message(const Generation& g, const AnswerPiece& piece) {
  const chat::ToolParse& parsed = piece.answer;
  json message = assistant_message(parsed.text);
  if (g.show_reasoning && !piece.reasoning.empty()) message["thinking"] = piece.reasoning;
  if (!parsed.calls.empty()) {
    json calls = json::array();
    for (const chat::ToolCall& call : parsed.calls) calls.push_back(ollama_tool_call(call));
    message["tool_calls"] = std::move(calls);
  }
  return message;
}

std::string chat_line(const Generation& g, json message) {
  json line = {{"model", g.model}, {"created_at", rfc3339_now()}, {"message", std::move(message)}, {"done", false}};
  return compact_dump(line) + "\n";
}

}  // namespace

std::string ollama_chat_line(Generation& g, const proto::StreamEvent& ev) {
  if (ev.text.empty()) return {};
  if (!g.tools && !g.reasoning) return chat_line(g, assistant_message(ev.text));
  AnswerPiece piece;
  split_answer(g, ev.text, /*end=*/false, piece);
  if (!g.show_reasoning) piece.reasoning.clear();
  if (piece.empty()) return {};
  return chat_line(g, parsed_message(g, piece));
}

std::string ollama_chat_held_line(Generation& g) {
  if (!g.tools && !g.reasoning) return {};
  AnswerPiece piece;
  split_answer(g, {}, /*end=*/true, piece);
  if (!g.show_reasoning) piece.reasoning.clear();
  if (piece.empty()) return {};
  return chat_line(g, parsed_message(g, piece));
}

json ollama_chat_final(Generation& g, const proto::StreamEvent& finished, bool with_text) {
  json last = ollama_final(g, finished, /*with_text=*/false);
  last.erase("response");
  if (with_text && (g.tools || g.reasoning)) {  // the whole answer parses exactly as streamed pieces would
    AnswerPiece piece;
    split_answer(g, g.text, /*end=*/true, piece);
    last["message"] = parsed_message(g, piece);
  } else {
    last["message"] = assistant_message(with_text ? g.text : std::string());
  }
  return last;
}

json ollama_chat_loaded(const ModelCatalogue& model, const std::string& done_reason) {
  return {{"model", model.id},
          {"created_at", rfc3339_now()},
          {"message", assistant_message("")},
          {"done", true},
          {"done_reason", done_reason}};
}

}  // namespace vks::http
