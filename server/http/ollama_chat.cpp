#include "server/http/ollama_chat.h"

#include <array>
#include <string_view>

#include "server/http/ollama_api.h"

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
    return n;
  }();
  return names;
}

std::variant<OllamaChatRequest, ApiError> map_ollama_chat(const json& body, const ModelCatalogue& model) {
  OllamaChatRequest out;
  json& w = out.wire;
  w = json::object();
  if (auto e = map_ollama_common(body, model, w, out.stream)) return std::move(*e);
  if (has_content(body, "tools")) return bad_field("tools (function calling) are not supported by this server", "tools");
  const auto it = body.find("messages");
  if (it == body.end() || it->is_null() || (it->is_array() && it->empty())) {
    out.load_only = true;
    return out;
  }
  if (!it->is_array()) return bad_field("messages must be an array of {role, content}", "messages");
  json messages = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string where = "messages." + std::to_string(i);
    if (!m.is_object()) return bad_field(where + " must be an object {role, content}", where);
    if (!m.contains("role") || !m["role"].is_string()) return bad_field(where + ".role must be a string", where + ".role");
    const std::string role = m["role"].get<std::string>();
    if (!known_role(role)) return bad_field(where + ".role '" + role + "' is not one of system, user, assistant, tool", where + ".role");
    if (has_content(m, "images")) return bad_field(where + ".images: images are not supported by this server", where + ".images");
    if (has_content(m, "tool_calls")) return bad_field(where + ".tool_calls: tool calls are not supported by this server", where + ".tool_calls");
    std::string content;
    if (auto c = m.find("content"); c != m.end() && !c->is_null()) {
      if (!c->is_string()) return bad_field(where + ".content must be a string", where + ".content");
      content = c->get<std::string>();
    }
    messages.push_back({{"role", role}, {"content", std::move(content)}});
  }
  w["messages"] = std::move(messages);
  return out;
}

std::string ollama_chat_line(const Generation& g, const EngineEvent& ev) {
  if (ev.text.empty()) return {};
  json line = {{"model", g.model}, {"created_at", rfc3339_now()}, {"message", assistant_message(ev.text)}, {"done", false}};
  return compact_dump(line) + "\n";
}

json ollama_chat_final(const Generation& g, const EngineEvent& finished, bool with_text) {
  json last = ollama_final(g, finished, /*with_text=*/false);
  last.erase("response");
  last["message"] = assistant_message(with_text ? g.text : std::string());
  return last;
}

json ollama_chat_loaded(const ModelCatalogue& model) {
  return {{"model", model.id},
          {"created_at", rfc3339_now()},
          {"message", assistant_message("")},
          {"done", true},
          {"done_reason", "load"}};
}

}  // namespace vks::http
