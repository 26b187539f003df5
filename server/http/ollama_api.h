#pragma once
// Ollama-compatible surface: POST /api/generate (NDJSON stream by default), /api/tags, /api/show,
// /api/ps, /api/version. `options` map onto the wire sampling fields.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

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
std::string ollama_token_line(const Generation& g, const proto::StreamEvent& ev);
// The final object (done: true, done_reason, counts and durations in ns).
nlohmann::json ollama_final(const Generation& g, const proto::StreamEvent& finished, bool with_text);

// Ollama's answer to the "load" / "unload" calls (/api/generate without a prompt).
nlohmann::json ollama_generate_loaded(const std::string& model_id, const std::string& done_reason);

// Every servable model (/api/tags).
nlohmann::json ollama_tags(const std::vector<ModelCatalogue>& models);
nlohmann::json ollama_show(const ModelCatalogue& model);

// A loaded model as /api/ps lists it: what it holds resident and when it unloads if idle.
struct LoadedModel {
  ModelCatalogue entry;
  uint64_t resident_bytes = 0;   // weights + KV pool
  int64_t expires_in_ms = -1;    // -1: never by itself
};
nlohmann::json ollama_ps(const std::vector<LoadedModel>& loaded);
nlohmann::json ollama_details(const ModelCatalogue& model);

}  // namespace vks::http
