#include "server/http/model_choice.h"

#include "server/http/keep_alive.h"

namespace vks::http {

std::variant<ModelChoice, ApiError> read_model_choice(const JsonBody& body, bool required, bool keep_alive) {
  ModelChoice choice;
  const auto it = body.find("model");
  if (it == body.end() || it->is_null()) {
    if (required) return bad_field("model is required (a string)", "model");
  } else if (!it->is_string()) {
    return bad_field(required ? "model is required (a string)" : "model must be a string", "model");
  } else {
    choice.name = it->get<std::string>();
  }
  if (keep_alive) {
    auto parsed = read_keep_alive(body);
    if (auto* e = std::get_if<ApiError>(&parsed)) return std::move(*e);
    choice.keep_alive = std::get<std::optional<double>>(parsed);
  }
  return choice;
}

void add_model_fields(nlohmann::json& wire, const std::string& model_id, const std::optional<double>& keep_alive) {
  if (!model_id.empty()) wire["model"] = model_id;  // the wire refuses an empty name
  if (keep_alive) wire["keep_alive"] = *keep_alive;
}

ApiError model_resolve_error(const proto::ProtocolError& error) {
  // The resolve answer has no retry hint of its own: a busy model set frees up within seconds.
  ApiError e = api_error_from_wire(error, 1000, {});
  if (e.status == 404) {
    e.code = "model_not_found";
    e.param = "model";
  }
  if (error.code == proto::WireError::kModelLoadFailed) e.param.clear();
  return e;
}

bool ollama_empty_prompt(const JsonBody& body, bool chat) {
  auto empty = [&body](const char* key) {
    const auto it = body.find(key);
    return it == body.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty()) ||
           (it->is_array() && it->empty());
  };
  return chat ? empty("messages") : empty("prompt") && empty("system");
}

}  // namespace vks::http
