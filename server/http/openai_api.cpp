#include "server/http/openai_api.h"

#include "server/http/choice_group.h"
#include "server/http/json_error.h"

namespace vks::http {

using nlohmann::json;

namespace {

// object[key] when object is an object holding key, else null.
const JsonBody* member(const JsonBody& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

json logprobs_of(const proto::StreamEvent& ev, const TokenText& token_text, size_t& text_bytes, int32_t top_n) {
  json lp = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
             {"text_offset", json::array()}};
  for (const proto::GeneratedToken& t : ev.logprobs) {
    const std::string piece = token_text(t.id);
    lp["tokens"].push_back(piece);
    lp["token_logprobs"].push_back(t.logprob);
    json top = json::object();
    for (size_t i = 0; i < t.top.size() && static_cast<int32_t>(i) < top_n; ++i) {
      top[token_text(t.top[i].id)] = t.top[i].logprob;
    }
    lp["top_logprobs"].push_back(top_n > 0 ? top : json(nullptr));
    lp["text_offset"].push_back(text_bytes);
    text_bytes += piece.size();
  }
  return lp;
}

}  // namespace

json openai_usage(const proto::StreamEvent& finished, int32_t prompt_tokens) {
  const int32_t prompt = finished.usage.prompt_tokens > 0 ? finished.usage.prompt_tokens : prompt_tokens;
  return {{"prompt_tokens", prompt},
          {"completion_tokens", finished.usage.generated_tokens},
          {"total_tokens", prompt + finished.usage.generated_tokens},
          {"prompt_tokens_details", {{"cached_tokens", finished.usage.cached_tokens}}}};
}

namespace {

json completion_chunk_base(const Generation& g) {
  return {{"id", "cmpl-" + g.answer_id()}, {"object", "text_completion"}, {"created", g.created_unix}, {"model", g.model}};
}

}  // namespace

json openai_chunk_base(const Generation& g) {
  if (g.api != Api::kOpenAiChat) return completion_chunk_base(g);
  return {{"id", "chatcmpl-" + g.answer_id()}, {"object", "chat.completion.chunk"}, {"created", g.created_unix}, {"model", g.model}};
}

const std::map<std::string, std::string>& openai_param_names() {
  static const std::map<std::string, std::string> names = {{"prompt_ids", "prompt"}, {"json_schema", "response_format"}};
  return names;
}

std::optional<ApiError> map_openai_common(const JsonBody& body, const ModelCatalogue& model, json& w, bool& stream,
                                          bool& include_usage) {
  const auto model_it = body.find("model");
  if (model_it != body.end() && !model_it->is_null()) {
    if (!model_it->is_string()) return bad_field("model must be a string", "model");
    if (!model.matches(model_it->get<std::string>())) {
      return ApiError{404, "The model '" + model_it->get<std::string>() + "' does not exist; this server serves '" +
                               model.id + "' (GET /v1/models)", "model_not_found", "model", 0};
    }
  }
  // best_of (the legacy server-side ranking of choices) is not done; n is read_choice_count's.
  if (auto it = body.find("best_of"); it != body.end() && !it->is_null() && !(it->is_number_integer() && it->get<int64_t>() == 1)) {
    return bad_field("best_of must be 1: choices are not ranked on the server (use n for several choices)", "best_of");
  }
  // max_tokens or its newer name; the caller sets its API's default when neither is given.
  if (body.contains("max_completion_tokens") && !body["max_completion_tokens"].is_null()) {
    w["max_tokens"] = body["max_completion_tokens"];
  } else if (body.contains("max_tokens") && !body["max_tokens"].is_null()) {
    w["max_tokens"] = body["max_tokens"];
  }
  for (const char* same : {"temperature", "top_p", "stop", "seed", "presence_penalty", "frequency_penalty",
                           "logit_bias", "top_k", "min_p", "repetition_penalty", "ignore_eos", "priority",
                           "deadline_ms", "min_tokens", "stop_token_ids", "penalty_last_n", "grammar",
                           "speculative"}) {
    copy_field(body, same, w, same);
  }
  if (auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return bad_field("stream must be a boolean", "stream");
    stream = it->get<bool>();
  }
  // Constrained output: the wire's json_schema (sent as text: schemas nest deeper than frames may).
  if (auto it = body.find("response_format"); it != body.end() && !it->is_null()) {
    // (find, never a const operator[]: on a missing key that is undefined behaviour)
    const JsonBody* type_value = member(*it, "type");
    const std::string type = type_value != nullptr && type_value->is_string() ? type_value->get<std::string>() : "";
    if (type == "json_object") {
      w["json_schema"] = R"({"type":"object"})";
    } else if (type == "json_schema") {
      const JsonBody* named = member(*it, "json_schema");
      const JsonBody* schema = named != nullptr ? member(*named, "schema") : nullptr;
      if (schema == nullptr || !(schema->is_object() || schema->is_boolean())) {
        return bad_field("response_format.json_schema.schema must be a JSON Schema object", "response_format.json_schema.schema");
      }
      w["json_schema"] = schema->dump();
    } else if (type != "text") {
      return bad_field("response_format must be {\"type\": \"text\" | \"json_object\" | \"json_schema\"}", "response_format");
    }
  }
  if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return bad_field("stream_options must be an object", "stream_options");
    auto iu = it->find("include_usage");
    if (iu != it->end() && !iu->is_null()) {
      if (!iu->is_boolean()) return bad_field("stream_options.include_usage must be a boolean", "stream_options.include_usage");
      include_usage = iu->get<bool>();
    }
  }
  if (auto it = body.find("user"); it != body.end() && !it->is_null() && !it->is_string()) {
    return bad_field("user must be a string", "user");
  }
  w["stream"] = true;  // events come to the front end, which decides how to answer
  return std::nullopt;
}

std::variant<OpenAiCompletionRequest, ApiError> map_openai_completion(const JsonBody& body, const ModelCatalogue& model) {
  OpenAiCompletionRequest out;
  json& w = out.wire;
  w = json::object();
  if (auto e = map_openai_common(body, model, w, out.stream, out.include_usage)) return std::move(*e);
  if (auto e = read_choice_count(body, out.n)) return std::move(*e);
  const auto prompt = body.find("prompt");
  if (prompt == body.end() || prompt->is_null()) return bad_field("prompt is required", "prompt", "missing_field");
  if (prompt->is_string()) {
    w["prompt"] = *prompt;
  } else if (prompt->is_array()) {
    const json& p = *prompt;
    if (p.size() == 1 && p[0].is_string()) {
      w["prompt"] = p[0];
    } else if (p.size() == 1 && p[0].is_array()) {
      w["prompt_ids"] = p[0];
    } else if (!p.empty() && p[0].is_number()) {
      w["prompt_ids"] = p;
    } else if (p.size() > 1 && (p[0].is_string() || p[0].is_array())) {
      return bad_field("several prompts in one request are not supported; send one request per prompt", "prompt");
    } else {
      return bad_field("prompt must be a string, an array of token ids, or an array holding one of those", "prompt");
    }
    if (w.contains("prompt_ids") && w["prompt_ids"].empty()) return bad_field("prompt must not be empty", "prompt");
  } else {
    return bad_field("prompt must be a string, an array of token ids, or an array holding one of those", "prompt");
  }
  if (auto it = body.find("echo"); it != body.end() && !it->is_null() && !(it->is_boolean() && !it->get<bool>())) {
    return bad_field("echo is not supported", "echo");
  }
  if (auto it = body.find("suffix"); it != body.end() && !it->is_null()) {
    return bad_field("suffix (insertion) is not supported", "suffix");
  }
  if (!w.contains("max_tokens")) w["max_tokens"] = 16;  // OpenAI's default for completions
  copy_field(body, "add_bos", w, "add_bos");
  if (auto it = body.find("logprobs"); it != body.end() && !it->is_null()) {
    // An integer here (the legacy completions API); `true` is /v1/chat/completions' form, with
    // top_logprobs beside it, and was taken for 0 although the documentation says 0..20.
    if (it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() <= 20) {
      out.logprobs = static_cast<int32_t>(it->get<int64_t>());
    } else {
      return bad_field("logprobs must be an integer 0..20 (alternatives per token) on /v1/completions", "logprobs");
    }
    if (out.logprobs >= 0) w["logprobs"] = out.logprobs;
  }
  return out;
}

void openai_accumulate(Generation& g, const proto::StreamEvent& ev, const TokenText& token_text) {
  g.text += ev.text;
  if (g.logprobs < 0) return;
  if (g.logprobs_acc.is_null()) {
    g.logprobs_acc = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
                      {"text_offset", json::array()}};
  }
  json lp = logprobs_of(ev, token_text, g.text_bytes, g.logprobs);
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    for (auto& v : lp[key]) g.logprobs_acc[key].push_back(std::move(v));
  }
}

std::string openai_token_chunk(Generation& g, const proto::StreamEvent& ev, const TokenText& token_text) {
  if (ev.text.empty() && (g.logprobs < 0 || ev.ids.empty())) return {};
  json chunk = completion_chunk_base(g);
  json choice = {{"text", ev.text}, {"index", g.choice}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  if (g.logprobs >= 0) choice["logprobs"] = logprobs_of(ev, token_text, g.text_bytes, g.logprobs);
  chunk["choices"] = json::array({std::move(choice)});
  return "data: " + compact_dump(chunk) + "\n\n";
}

std::string openai_final_chunks(const Generation& g, const proto::StreamEvent& finished) {
  if (finished.reason == proto::FinishReason::kError) return openai_failed_stream_end(g.error_message);
  return openai_choice_end_chunk(g, finished) + openai_answer_end_chunks(g, openai_usage(finished, g.prompt_tokens));
}

std::string openai_failed_stream_end(const std::string& error_message) {
  const std::string message = error_message.empty() ? "generation failed" : error_message;
  return "data: " + openai_error_body(500, message, "generation_failed") + "\n\ndata: [DONE]\n\n";
}

std::string openai_choice_end_chunk(const Generation& g, const proto::StreamEvent& finished) {
  json chunk = completion_chunk_base(g);
  chunk["choices"] = json::array(
      {{{"text", ""}, {"index", g.choice}, {"logprobs", nullptr}, {"finish_reason", finish_reason_text(finished.reason)}}});
  if (g.include_usage) chunk["usage"] = nullptr;
  return "data: " + compact_dump(chunk) + "\n\n";
}

std::string openai_answer_end_chunks(const Generation& g, const json& usage) {
  std::string out;
  if (g.include_usage) {
    json usage_chunk = openai_chunk_base(g);
    usage_chunk["choices"] = json::array();
    usage_chunk["usage"] = usage;
    out += "data: " + compact_dump(usage_chunk) + "\n\n";
  }
  return out + "data: [DONE]\n\n";
}

json openai_completion(const Generation& g, const proto::StreamEvent& finished) {
  json answer = completion_chunk_base(g);
  answer["choices"] = json::array({{{"text", g.text},
                                    {"index", g.choice},
                                    {"logprobs", g.logprobs >= 0 ? g.logprobs_acc : json(nullptr)},
                                    {"finish_reason", finish_reason_text(finished.reason)}}});
  answer["usage"] = openai_usage(finished, g.prompt_tokens);
  return answer;
}

json openai_model(const ModelCatalogue& model) {
  json m = {{"id", model.id}, {"object", "model"}, {"created", model.created_unix}, {"owned_by", "vkstream"}};
  // Beyond OpenAI's fields (as llama.cpp's server adds "meta"): the size and the expert layout.
  json meta = {{"architecture", model.info.architecture},
               {"parameters", model.info.parameters},
               {"active_parameters", model.info.active_parameters},
               {"context_length", model.info.context_length}};
  if (model.info.n_experts > 1) {
    meta["experts"] = {{"count", model.info.n_experts},
                       {"used", model.info.n_experts_used},
                       {"feed_forward_length", model.info.expert_hidden_dim}};
  }
  m["meta"] = std::move(meta);
  return m;
}

json openai_models(const std::vector<ModelCatalogue>& models) {
  json data = json::array();
  for (const ModelCatalogue& model : models) data.push_back(openai_model(model));
  return {{"object", "list"}, {"data", std::move(data)}};
}

}  // namespace vks::http
