#pragma once
// OpenAI-compatible surface: POST /v1/completions mapped onto the wire generate request, its
// answers (whole, or SSE chunks ending with `data: [DONE]`), and GET /v1/models.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "server/http/api_common.h"
#include "server/http/generation.h"

namespace vks::http {

struct OpenAiCompletionRequest {
  nlohmann::json wire;        // wire generate fields
  bool stream = false;
  bool include_usage = false;
  int32_t logprobs = -1;
  int32_t n = 1;              // choices (choice_group.h)
};

// Validates the OpenAI fields we translate (prompt shape, n, echo, suffix, ...) and builds the
// wire map; everything else is checked by the wire parser.
std::variant<OpenAiCompletionRequest, ApiError> map_openai_completion(const JsonBody& body,
                                                                      const ModelCatalogue& model);
// The fields /v1/completions and /v1/chat/completions share (model, best_of, max_tokens, sampling,
// stream, stream_options, response_format, user) into the wire map `wire`.
std::optional<ApiError> map_openai_common(const JsonBody& body, const ModelCatalogue& model,
                                          nlohmann::json& wire, bool& stream, bool& include_usage);
// wire field -> OpenAI field, for error params.
const std::map<std::string, std::string>& openai_param_names();

// Adds one token event to a non-streamed answer, or renders it as one SSE chunk ("" when it
// carries nothing to send).
void openai_accumulate(Generation& g, const proto::StreamEvent& ev, const TokenText& token_text);
std::string openai_token_chunk(Generation& g, const proto::StreamEvent& ev, const TokenText& token_text);
// The end: the final SSE chunk(s) (finish_reason, usage when asked, an error object when the
// request failed) and "data: [DONE]".
std::string openai_final_chunks(const Generation& g, const proto::StreamEvent& finished);
// What every streamed chunk of the generation's answer carries: id, object, created, model
// (completions' or chat's).
nlohmann::json openai_chunk_base(const Generation& g);
// The parts of that end, for an answer of several choices (choice_group.h): one choice's
// finish_reason chunk; the answer's usage chunk when asked (on chat too) and [DONE]; the error
// event and [DONE] that end a failed stream (on chat too).
std::string openai_choice_end_chunk(const Generation& g, const proto::StreamEvent& finished);
std::string openai_answer_end_chunks(const Generation& g, const nlohmann::json& usage);
std::string openai_failed_stream_end(const std::string& error_message);
// The whole non-streamed answer.
nlohmann::json openai_completion(const Generation& g, const proto::StreamEvent& finished);

// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}.
nlohmann::json openai_usage(const proto::StreamEvent& finished, int32_t prompt_tokens);

nlohmann::json openai_models(const std::vector<ModelCatalogue>& models);  // every servable model
nlohmann::json openai_model(const ModelCatalogue& model);

}  // namespace vks::http
