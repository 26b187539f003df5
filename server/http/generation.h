#pragma once
// One HTTP generation in flight: which API asked, where its answer goes (connection + exchange),
// and what a non-streamed answer has gathered so far.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/chat/reasoning.h"
#include "engine/chat/tool_call_parser.h"
#include "protocol/errors.h"
#include "protocol/wire_types.h"
#include "server/http/embeddings_api.h"

namespace vks::http {

struct ChoiceGroup;  // server/http/choice_group.h

enum class Api { kOpenAiCompletion, kOllamaGenerate, kOpenAiChat, kOllamaChat, kEmbed, kAnthropicMessages, kOpenAiResponses };

inline bool is_chat(Api api) {
  return api == Api::kOpenAiChat || api == Api::kOllamaChat || api == Api::kAnthropicMessages || api == Api::kOpenAiResponses;
}

struct Generation {
  bool ollama() const {
    return api == Api::kOllamaGenerate || api == Api::kOllamaChat || (api == Api::kEmbed && embed.api != EmbedApi::kOpenAi);
  }

  // The id the answer shows ("chatcmpl-<id>"): the request's own, or its group's.
  const std::string& answer_id() const { return group_answer_id.empty() ? id : group_answer_id; }

  Api api = Api::kOpenAiCompletion;
  std::string id;                 // bare vkstream id
  // OpenAI's n > 1: this request is choice `choice` of the answer `group` puts together (null: the
  // answer is this request's alone); group_answer_id is that answer's id (choice 0's request id).
  std::shared_ptr<ChoiceGroup> group;
  int32_t choice = 0;
  std::string group_answer_id;
  std::string model;
  int64_t created_unix = 0;
  uint64_t conn_id = 0;
  uint64_t exchange = 0;
  bool stream = false;
  bool include_usage = false;     // OpenAI stream_options.include_usage
  int32_t logprobs = -1;          // OpenAI logprobs: N alternatives per token (chat: top_logprobs), -1 = none
  int32_t prompt_tokens = 0;
  // When the request arrived (before tokenizing / rendering and the engine's queue): Ollama's
  // total_duration covers all of it, so it is never shorter than the engine's own timings.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  int64_t load_ns = 0;            // of that, waiting for its model to be loaded (Ollama's load_duration)
  std::string text;               // non-streamed: everything so far
  size_t text_bytes = 0;          // streamed or not: bytes of text so far (logprobs text_offset)
  nlohmann::json logprobs_acc;    // non-streamed OpenAI logprobs object (chat: {"content": [...]})
  EmbedHttpRequest embed;         // kEmbed: which API asked, base64 or not (its wire is not kept)
  // Chat with tools offered: the answer is split into text and tool calls (the served template's
  // format) as it streams; tool_calls_sent counts the calls already sent.
  std::optional<chat::ToolCallParser> tools;
  size_t tool_calls_sent = 0;
  // The served template thinks: its <think> block is split off the answer (answer_parse.h);
  // show_reasoning: the API shows it (Anthropic only when thinking was asked for).
  std::optional<chat::ReasoningParser> reasoning;
  bool show_reasoning = true;
  std::optional<bool> enable_thinking;  // the request's thinking switch, as the template was told
  // Counts the tokens spent reasoning (usage's reasoning_tokens), streamed or not: a copy of the
  // parser fed event by event; an event whose text settles no content after the block opened is
  // reasoning (the close marker's tokens included).
  std::optional<chat::ReasoningParser> reasoning_counter;
  int32_t reasoning_tokens = 0;
  int32_t reasoning_block = -1;   // Anthropic / Responses streaming: the open thinking block (item), -1 = none
  std::string reasoning_text;     // Responses streaming: the open reasoning item's text
  int32_t open_text_block = -1;   // Anthropic / Responses streaming: the text block (item) being streamed, -1 = none
  int32_t open_tool_block = -1;   // Anthropic / Responses streaming: the call block (item) whose arguments stream, -1 = none
  std::string open_call_name;       // Responses streaming: the open function_call item's name
  std::string open_call_arguments;  // and its arguments so far
  int32_t blocks = 0;             // Anthropic / Responses streaming: content blocks (output items) started
  int64_t sequence = 0;           // Responses streaming: the events' sequence_number
  nlohmann::json echo;            // Responses: the request's settings each response object repeats
  std::optional<std::string> cors_origin;  // the request's allowed Origin (CORS header on its answer)
  std::string error_message;      // from its error event
  proto::WireError error_code = proto::WireError::kInternal;
};

// The text of one token for logprobs ("tokens" and "top_logprobs" keys).
using TokenText = std::function<std::string(proto::TokenId)>;

}  // namespace vks::http
