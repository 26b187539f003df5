#pragma once
// OpenAI-compatible POST /v1/chat/completions mapped onto the wire `chat` request (the server
// renders the conversation with the model's chat template, PROTOCOL.md 3.10), and its answers:
// a "chat.completion" object, or "chat.completion.chunk" SSE events (a first delta with the
// assistant role, content deltas, a last chunk with finish_reason, usage when asked, [DONE]).
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <variant>

#include "server/http/api_common.h"
#include "server/http/generation.h"

namespace vks::http {

struct OpenAiChatRequest {
  nlohmann::json wire;        // wire chat fields
  bool stream = false;
  bool include_usage = false;
  int32_t logprobs = -1;      // top_logprobs when logprobs is true, else -1
  int32_t n = 1;              // choices (choice_group.h)
  std::optional<chat::ToolCallParser> tools;  // tools offered: the answer's parser (served template's format)
};

// Validates messages (roles, string or text-part content), logprobs/top_logprobs and the
// unsupported chat features (images, the legacy functions API); the rest is map_openai_common's and the wire's.
std::variant<OpenAiChatRequest, ApiError> map_openai_chat(const JsonBody& body, const ModelCatalogue& model);
// wire field -> OpenAI field, for error params.
const std::map<std::string, std::string>& openai_chat_param_names();

// The first SSE chunk of a streamed answer: delta {role: "assistant", content: ""}.
std::string openai_chat_first_chunk(const Generation& g);
// Adds one token event to a non-streamed answer, or renders it as one SSE chunk ("" when it
// carries nothing to send).
void openai_chat_accumulate(Generation& g, const proto::StreamEvent& ev, const TokenText& token_text);
std::string openai_chat_token_chunk(Generation& g, const proto::StreamEvent& ev, const TokenText& token_text);
// The last chunk (finish_reason), the usage chunk when asked, and [DONE]; an error event instead
// when the generation failed.
// With tools, what the parser still held goes out first, and a turn with calls finishes with
// "tool_calls".
std::string openai_chat_final_chunks(Generation& g, const proto::StreamEvent& finished);
// Of that, one choice's end (what the parsers held, then its finish_reason chunk), for an answer
// of several choices (choice_group.h), which ends with openai_answer_end_chunks.
std::string openai_chat_choice_end_chunks(Generation& g, const proto::StreamEvent& finished);
// OpenAI's usage, with completion_tokens_details.reasoning_tokens when the template thinks.
nlohmann::json openai_chat_usage(const Generation& g, const proto::StreamEvent& finished);
// The whole non-streamed answer (with tools: content and message.tool_calls parsed from it).
nlohmann::json openai_chat_completion(Generation& g, const proto::StreamEvent& finished);
// "tool_calls" when the turn called tools and stopped, else the finish reason's name.
std::string openai_chat_finish_reason(proto::FinishReason reason, size_t calls);

}  // namespace vks::http
