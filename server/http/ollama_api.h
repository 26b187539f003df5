#pragma once
// Ollama-compatible surface: POST /api/generate (NDJSON stream by default), /api/tags, /api/show,
// /api/ps, /api/version. `options` map onto the wire sampling fields.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>

#include "server/http/api_common.h"
#include "server/http/generation.h"

namespace vks::http {

struct OllamaGenerateRequest {
  nlohmann::json wire;
  bool stream = true;
  bool load_only = false;  // no prompt: Ollama's "load the model" request, answered done at once
};

// The fields /api/generate and /api/chat share (model, stream, format, options) into the wire map.
std::optional<ApiError> map_ollama_common(const JsonBody& body, const ModelCatalogue& model,
                                          nlohmann::json& wire, bool& stream);
std::variant<OllamaGenerateRequest, ApiError> map_ollama_generate(const JsonBody& body,
                                                                  const ModelCatalogue& model);
const std::map<std::string, std::string>& ollama_param_names();

// One NDJSON line for a token event ("" when it carries no text).
std::string ollama_token_line(const Generation& g, const EngineEvent& ev);
// The final object (done: true, done_reason, counts and durations in ns).
nlohmann::json ollama_final(const Generation& g, const EngineEvent& finished, bool with_text);

nlohmann::json ollama_tags(const ModelCatalogue& model);
nlohmann::json ollama_show(const ModelCatalogue& model);
nlohmann::json ollama_ps(const ModelCatalogue& model);
nlohmann::json ollama_details(const ModelCatalogue& model);

}  // namespace vks::http
