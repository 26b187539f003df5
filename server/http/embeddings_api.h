#pragma once
// Embeddings over HTTP: OpenAI POST /v1/embeddings, Ollama POST /api/embed and the legacy
// POST /api/embeddings, mapped onto the wire `embed` request (`input` texts or `tokens` id arrays,
// `normalize`, `pooling`), and their answers from the pooled vectors.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "server/http/api_common.h"

namespace vks::http {

enum class EmbedApi { kOpenAi, kOllama, kOllamaLegacy };

struct EmbedHttpRequest {
  nlohmann::json wire;       // wire embed fields
  EmbedApi api = EmbedApi::kOpenAi;
  bool base64 = false;       // OpenAI encoding_format "base64": little-endian float32, base64
  bool load_only = false;    // Ollama /api/embed without input: the "load the model" request
};

std::variant<EmbedHttpRequest, ApiError> map_openai_embeddings(const nlohmann::json& body, const ModelCatalogue& model);
std::variant<EmbedHttpRequest, ApiError> map_ollama_embed(const nlohmann::json& body, const ModelCatalogue& model);
// Legacy /api/embeddings: {"model", "prompt"} → {"embedding": [...]}, not normalized (as Ollama's).
std::variant<EmbedHttpRequest, ApiError> map_ollama_embeddings_legacy(const nlohmann::json& body,
                                                                      const ModelCatalogue& model);
// wire field -> API field, for error params.
const std::map<std::string, std::string>& embed_param_names(EmbedApi api);

struct EmbedResult {
  std::vector<std::vector<float>> vectors;  // one per input, in order
  int32_t prompt_tokens = 0;
  int64_t total_ns = 0;                     // request arrival to answer (Ollama total_duration)
  int64_t load_ns = 0;                      // of that, waiting for the model to load (load_duration)
};

nlohmann::json embeddings_answer(const EmbedHttpRequest& request, const std::string& model_id, const EmbedResult& result);

// RFC 4648 base64 of the vector's float32 values, little-endian (OpenAI's encoding_format base64).
std::string base64_floats(const std::vector<float>& values);

}  // namespace vks::http
