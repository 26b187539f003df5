#include "server/http/embeddings_api.h"

#include <algorithm>
#include <bit>

namespace vks::http {

using nlohmann::json;

namespace {

std::optional<ApiError> check_model(const json& body, const ModelCatalogue& model, bool required) {
  const auto it = body.find("model");
  if (it == body.end() || it->is_null()) {
    if (required) return bad_field("model is required (a string)", "model");
    return std::nullopt;
  }
  if (!it->is_string()) return bad_field("model must be a string", "model");
  if (!model.matches(it->get<std::string>())) {
    return ApiError{404, "model '" + it->get<std::string>() + "' not found; this server serves '" + model.id + "'",
                    "model_not_found", "model", 0};
  }
  return std::nullopt;
}

bool all_of_type(const json& array, bool (json::*is)() const noexcept) {
  for (const json& v : array) {
    if (!(v.*is)()) return false;
  }
  return true;
}

// vkstream's own fields, under their wire names (checked by the wire parser).
void copy_extras(const json& body, json& w) {
  copy_field(body, "normalize", w, "normalize");
  copy_field(body, "pooling", w, "pooling");
}

}  // namespace

const std::map<std::string, std::string>& embed_param_names(EmbedApi api) {
  static const std::map<std::string, std::string> openai = {{"tokens", "input"}};
  static const std::map<std::string, std::string> ollama = {{"tokens", "input"}};
  static const std::map<std::string, std::string> legacy = {{"input", "prompt"}, {"tokens", "prompt"}};
  switch (api) {
    case EmbedApi::kOpenAi: return openai;
    case EmbedApi::kOllama: return ollama;
    case EmbedApi::kOllamaLegacy: return legacy;
  }
  return openai;
}

std::variant<EmbedHttpRequest, ApiError> map_openai_embeddings(const json& body, const ModelCatalogue& model) {
  EmbedHttpRequest out;
  out.api = EmbedApi::kOpenAi;
  json& w = out.wire;
  w = json::object();
  if (auto e = check_model(body, model, false)) return std::move(*e);
  const auto input = body.find("input");
  if (input == body.end() || input->is_null()) return bad_field("input is required", "input", "missing_field");
  if (input->is_string()) {
    w["input"] = json::array({*input});
  } else if (input->is_array() && !input->empty() && all_of_type(*input, &json::is_string)) {
    w["input"] = *input;
  } else if (input->is_array() && !input->empty() && all_of_type(*input, &json::is_number)) {
    w["tokens"] = json::array({*input});
  } else if (input->is_array() && !input->empty() && all_of_type(*input, &json::is_array)) {
    w["tokens"] = *input;
  } else {
    return bad_field("input must be a string, an array of strings, an array of token ids or an array of such arrays "
               "(not empty)", "input");
  }
  if (auto it = body.find("encoding_format"); it != body.end() && !it->is_null()) {
    if (*it == "base64") {
      out.base64 = true;
    } else if (*it != "float") {
      return bad_field("encoding_format must be \"float\" or \"base64\"", "encoding_format");
    }
  }
  if (auto it = body.find("dimensions"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() != model.info.dim) {
      return bad_field("dimensions: this model's embeddings have " + std::to_string(model.info.dim) +
                 " dimensions and cannot be shortened", "dimensions");
    }
  }
  if (auto it = body.find("user"); it != body.end() && !it->is_null() && !it->is_string()) {
    return bad_field("user must be a string", "user");
  }
  copy_extras(body, w);
  return out;
}

std::variant<EmbedHttpRequest, ApiError> map_ollama_embed(const json& body, const ModelCatalogue& model) {
  EmbedHttpRequest out;
  out.api = EmbedApi::kOllama;
  json& w = out.wire;
  w = json::object();
  if (auto e = check_model(body, model, true)) return std::move(*e);
  const auto input = body.find("input");
  if (input == body.end() || input->is_null() || (input->is_array() && input->empty()) ||
      (input->is_string() && input->get<std::string>().empty())) {
    out.load_only = true;
    return out;
  }
  if (input->is_string()) {
    w["input"] = json::array({*input});
  } else if (input->is_array() && all_of_type(*input, &json::is_string)) {
    w["input"] = *input;
  } else {
    return bad_field("input must be a string or an array of strings", "input");
  }
  // truncate (default true in Ollama): vkstream never truncates; an input longer than the
  // context is an error either way.
  if (auto it = body.find("truncate"); it != body.end() && !it->is_null() && !it->is_boolean()) {
    return bad_field("truncate must be a boolean", "truncate");
  }
  copy_extras(body, w);
  return out;
}

std::variant<EmbedHttpRequest, ApiError> map_ollama_embeddings_legacy(const json& body, const ModelCatalogue& model) {
  EmbedHttpRequest out;
  out.api = EmbedApi::kOllamaLegacy;
  json& w = out.wire;
  w = json::object();
  if (auto e = check_model(body, model, true)) return std::move(*e);
  const json prompt = body.contains("prompt") ? body.at("prompt") : json();
  if (prompt.is_null() || prompt == "") {
    out.load_only = true;
    return out;
  }
  if (!prompt.is_string()) return bad_field("prompt must be a string", "prompt");
  w["input"] = json::array({prompt});
  w["normalize"] = false;  // Ollama's legacy endpoint answers the raw pooled vector
  return out;
}

std::string base64_floats(const std::vector<float>& values) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * 4, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits = std::bit_cast<uint32_t>(values[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xFF);  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k) chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 0x3F] : '=';
  }
  return out;
}

json embeddings_answer(const EmbedHttpRequest& request, const std::string& model_id, const EmbedResult& result) {
  switch (request.api) {
    case EmbedApi::kOpenAi: {
      json data = json::array();
      for (size_t i = 0; i < result.vectors.size(); ++i) {
        data.push_back({{"object", "embedding"},
                        {"index", i},
                        {"embedding", request.base64 ? json(base64_floats(result.vectors[i])) : json(result.vectors[i])}});
      }
      return {{"object", "list"},
              {"data", std::move(data)},
              {"model", model_id},
              {"usage", {{"prompt_tokens", result.prompt_tokens}, {"total_tokens", result.prompt_tokens}}}};
    }
    case EmbedApi::kOllama:
      return {{"model", model_id},
              {"embeddings", result.vectors},
              {"total_duration", result.total_ns},
              {"load_duration", result.load_ns},
              {"prompt_eval_count", result.prompt_tokens}};
    case EmbedApi::kOllamaLegacy:
      return {{"embedding", result.vectors.empty() ? json::array() : json(result.vectors[0])}};
  }
  return json::object();
}

}  // namespace vks::http
