#pragma once
// Anthropic Messages API: POST /v1/messages mapped onto the wire `chat` request (system, content
// blocks, tool_use / tool_result blocks, tools with input_schema, tool_choice auto/any/tool/none,
// stop_sequences), and its answers: a "message" object with text and tool_use content blocks, or
// the typed SSE events message_start, content_block_start/delta/stop, message_delta, message_stop.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <variant>

#include "server/http/api_common.h"
#include "server/http/generation.h"

namespace vks::http {

struct AnthropicRequest {
  nlohmann::json wire;  // wire chat fields
  bool stream = false;
  std::optional<chat::ToolCallParser> tools;
  bool show_reasoning = false;  // thinking {type: enabled}: thinking blocks
};

std::variant<AnthropicRequest, ApiError> map_anthropic_messages(const JsonBody& body, const ModelCatalogue& model);
const std::map<std::string, std::string>& anthropic_param_names();

// Streamed: the message_start event.
std::string anthropic_message_start(const Generation& g);
// Streamed: the events of one token event (text deltas, whole tool_use blocks).
std::string anthropic_token_events(Generation& g, const proto::StreamEvent& ev);
// Streamed: what the parser held, the open block's stop, message_delta (stop_reason, usage) and
// message_stop; an error event when the generation failed.
std::string anthropic_final_events(Generation& g, const proto::StreamEvent& finished);
// The whole non-streamed answer.
nlohmann::json anthropic_message(Generation& g, const proto::StreamEvent& finished);

}  // namespace vks::http
