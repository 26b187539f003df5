#include "server/http/ollama_api.h"

#include <chrono>
#include <ctime>

namespace vks::http {

using nlohmann::json;

namespace {

int64_t ns_of_ms(double ms) { return static_cast<int64_t>(ms * 1e6); }

std::string parameter_size(const ModelCatalogue& m) {
  // The engine's count (every expert included), or a rough count from the shapes where an older
  // daemon's model answer has none: embeddings (the output projection too, unless it is the same
  // tensor) + per-layer attention and MLP.
  const double d = m.info.dim;
  const double params = m.info.parameters > 0
                            ? static_cast<double>(m.info.parameters)
                            : d * m.info.vocab_size * (m.tied_embeddings ? 1 : 2) +
                                  m.info.n_layers * (d * d * 2 + 2 * d * m.info.n_kv_heads * m.info.head_dim +
                                                     3 * d * m.info.hidden_dim);
  if (params <= 0) return "";  // a model not loaded yet whose header gave no shapes: unknown, not "0K"
  char buf[32];
  if (params >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.1fB", params / 1e9);
  } else if (params >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.1fM", params / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0fK", params / 1e3);
  }
  return buf;
}

}  // namespace

const std::map<std::string, std::string>& ollama_param_names() {
  static const std::map<std::string, std::string> names = {
      {"max_tokens", "options.num_predict"},       {"temperature", "options.temperature"},
      {"top_k", "options.top_k"},                   {"top_p", "options.top_p"},
      {"min_p", "options.min_p"},                   {"seed", "options.seed"},
      {"stop", "options.stop"},                     {"repetition_penalty", "options.repeat_penalty"},
      {"presence_penalty", "options.presence_penalty"}, {"frequency_penalty", "options.frequency_penalty"},
      {"penalty_last_n", "options.repeat_last_n"},  {"prompt_ids", "context"}, {"json_schema", "format"},
      {"max_context_tokens", "options.num_ctx"}};
  return names;
}

std::optional<ApiError> map_ollama_common(const JsonBody& body, const ModelCatalogue& model, json& w, bool& stream) {
  const auto model_it = body.find("model");
  if (model_it == body.end() || !model_it->is_string()) return bad_field("model is required (a string)", "model");
  if (!model.matches(model_it->get<std::string>())) {
    return ApiError{404, "model '" + model_it->get<std::string>() + "' not found; this server serves '" + model.id + "'",
                    "model_not_found", "model", 0};
  }
  if (auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return bad_field("stream must be a boolean", "stream");
    stream = it->get<bool>();
  }
  // format: "json" (any JSON object) or a JSON Schema -> the wire's json_schema (as text).
  if (auto it = body.find("format"); it != body.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty())) {
    if (it->is_string() && it->get<std::string>() == "json") {
      w["json_schema"] = R"({"type":"object"})";
    } else if (it->is_object()) {
      w["json_schema"] = it->dump();
    } else {
      return bad_field("format must be \"json\" or a JSON Schema object", "format");
    }
  }
  if (auto it = body.find("options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return bad_field("options must be an object", "options");
    const JsonBody& o = *it;
    for (const auto& [api, wire] : std::initializer_list<std::pair<const char*, const char*>>{
             {"temperature", "temperature"}, {"top_k", "top_k"}, {"top_p", "top_p"}, {"min_p", "min_p"},
             {"seed", "seed"}, {"stop", "stop"}, {"repeat_penalty", "repetition_penalty"},
             {"presence_penalty", "presence_penalty"}, {"frequency_penalty", "frequency_penalty"},
             {"repeat_last_n", "penalty_last_n"}, {"num_ctx", "max_context_tokens"}}) {
      copy_field(o, api, w, wire);
    }
    if (auto np = o.find("num_predict"); np != o.end() && !np->is_null()) {
      // -1 (infinite) and -2 (fill the context): the server's default bound.
      if (!(np->is_number_integer() && np->get<int64_t>() < 0)) w["max_tokens"] = *np;
    }
  }
  w["stream"] = true;
  return std::nullopt;
}

std::variant<OllamaGenerateRequest, ApiError> map_ollama_generate(const JsonBody& body, const ModelCatalogue& model) {
  OllamaGenerateRequest out;
  json& w = out.wire;
  w = json::object();
  if (auto e = map_ollama_common(body, model, w, out.stream)) return std::move(*e);
  for (const char* unsupported : {"images", "suffix"}) {
    auto it = body.find(unsupported);
    if (it != body.end() && !it->is_null() && !(it->is_array() && it->empty()) && !(it->is_string() && it->get<std::string>().empty())) {
      return bad_field(std::string(unsupported) + " is not supported by this server", unsupported);
    }
  }
  std::string prompt;
  if (auto it = body.find("prompt"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return bad_field("prompt must be a string", "prompt");
    prompt = it->get<std::string>();
  }
  if (auto it = body.find("system"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return bad_field("system must be a string", "system");
    if (!it->get<std::string>().empty()) prompt = it->get<std::string>() + "\n\n" + prompt;
  }
  if (auto it = body.find("context"); it != body.end() && !it->is_null() && !(it->is_array() && it->empty())) {
    return bad_field("context (token ids of an earlier answer) is not supported; send the text as prompt", "context");
  }
  if (prompt.empty()) {
    out.load_only = true;
    return out;
  }
  w["prompt"] = prompt;
  return out;
}

std::string ollama_token_line(const Generation& g, const proto::StreamEvent& ev) {
  if (ev.text.empty()) return {};
  json line = {{"model", g.model}, {"created_at", rfc3339_now()}, {"response", ev.text}, {"done", false}};
  return compact_dump(line) + "\n";
}

json ollama_final(const Generation& g, const proto::StreamEvent& finished, bool with_text) {
  const auto total_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - g.started).count();
  // The wire's ttft_ms includes the wait for the model's load (timings.load_ms), which Ollama
  // reports apart as load_duration: the prompt's evaluation is the engine's share only.
  const double prompt_ms =
      std::max(0.0, finished.timings.ttft_ms - finished.timings.load_ms - finished.timings.queue_ms);
  const double eval_ms = std::max(0.0, finished.timings.total_ms - finished.timings.ttft_ms);
  const int32_t prompt = finished.usage.prompt_tokens > 0 ? finished.usage.prompt_tokens : g.prompt_tokens;
  return {{"model", g.model},
          {"created_at", rfc3339_now()},
          {"response", with_text ? g.text : std::string()},
          {"done", true},
          // Ollama ends a turn that called tools with "stop" (the wire says tool_calls).
          {"done_reason", finished.reason == proto::FinishReason::kToolCalls ? std::string("stop") : finish_reason_text(finished.reason)},
          {"total_duration", total_ns},
          {"load_duration", g.load_ns},
          {"prompt_eval_count", prompt},
          {"prompt_eval_duration", ns_of_ms(prompt_ms)},
          {"eval_count", finished.usage.generated_tokens},
          {"eval_duration", ns_of_ms(eval_ms)}};
}

json ollama_details(const ModelCatalogue& model) {
  return {{"parent_model", ""},
          {"format", "gguf"},
          {"family", model.info.architecture},
          {"families", json::array({model.info.architecture})},
          {"parameter_size", parameter_size(model)},
          {"quantization_level", model.file_type}};
}

json ollama_generate_loaded(const std::string& model_id, const std::string& done_reason) {
  return {{"model", model_id}, {"created_at", rfc3339_now()}, {"response", ""}, {"done", true}, {"done_reason", done_reason}};
}

json ollama_tags(const std::vector<ModelCatalogue>& models) {
  json list = json::array();
  for (const ModelCatalogue& model : models) {
    char modified[64];
    const std::time_t t = static_cast<std::time_t>(model.created_unix);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(modified, sizeof(modified), "%Y-%m-%dT%H:%M:%SZ", &tm);
    list.push_back({{"name", model.id + ":latest"},
                    {"model", model.id + ":latest"},
                    {"modified_at", modified},
                    {"size", model.file_bytes},
                    {"digest", model.digest},
                    {"details", ollama_details(model)}});
  }
  return {{"models", std::move(list)}};
}

// What /api/show lists: tools where the template renders them, thinking where it has a <think> block.
namespace {
json ollama_capabilities(const ModelCatalogue& model) {
  json c = json::array({"completion"});
  if (model.tool_format.native) c.push_back("tools");
  if (model.reasoning.thinks()) c.push_back("thinking");
  return c;
}
}  // namespace

json ollama_show(const ModelCatalogue& model) {
  const std::string arch = model.info.architecture;
  json info = {{"general.architecture", arch},
               {"general.name", model.id},
               {"general.parameter_count", model.info.parameters},
               {arch + ".context_length", model.info.context_length},
               {arch + ".embedding_length", model.info.dim},
               {arch + ".block_count", model.info.n_layers},
               {arch + ".attention.head_count", model.info.n_heads},
               {arch + ".attention.head_count_kv", model.info.n_kv_heads},
               {arch + ".feed_forward_length", model.info.hidden_dim},
               {"tokenizer.ggml.vocab_size", model.info.vocab_size}};
  if (model.info.n_experts > 1) {  // as the GGUF keys name them, and the active count beside
    info[arch + ".expert_count"] = model.info.n_experts;
    info[arch + ".expert_used_count"] = model.info.n_experts_used;
    info[arch + ".expert_feed_forward_length"] = model.info.expert_hidden_dim;
    info["general.active_parameter_count"] = model.info.active_parameters;
  }
  return {{"modelfile", ""},
          {"parameters", ""},
          {"template", "{{ .Prompt }}"},
          {"details", ollama_details(model)},
          {"model_info", info},
          // "tools" when the served template renders tools itself (tool_format.h); the generic
          // tool form works with any template but is not the model's own.
          {"capabilities", ollama_capabilities(model)}};
}

json ollama_ps(const std::vector<LoadedModel>& loaded) {
  json list = json::array();
  for (const LoadedModel& m : loaded) {
    // Ollama answers a far-future date for a model kept loaded for ever (keep_alive < 0).
    const std::string expires =
        m.expires_in_ms < 0 ? std::string("2318-01-01T00:00:00Z")
                            : rfc3339_at(std::chrono::system_clock::now() + std::chrono::milliseconds(m.expires_in_ms));
    list.push_back({{"name", m.entry.id + ":latest"},
                    {"model", m.entry.id + ":latest"},
                    {"size", m.resident_bytes},
                    {"digest", m.entry.digest},
                    {"details", ollama_details(m.entry)},
                    {"expires_at", expires},
                    {"size_vram", m.entry.info.device == "cpu" ? 0 : m.resident_bytes}});
  }
  return {{"models", std::move(list)}};
}

}  // namespace vks::http
