#pragma once
// OpenAI Responses API (stateless): POST /v1/responses mapped onto the wire `chat` request (input
// text or items: messages, function_call and function_call_output; instructions; function tools;
// text.format JSON schema), and its answers: a "response" object whose output holds a message
// item and function_call items, or the typed SSE events (response.created,
// response.output_item.added, response.output_text.delta, response.function_call_arguments.delta,
// response.output_item.done, response.completed, ...).
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <variant>

#include "server/http/api_common.h"
#include "server/http/generation.h"

namespace vks::http {

struct OpenAiResponsesRequest {
  nlohmann::json wire;
  bool stream = false;
  std::optional<chat::ToolCallParser> tools;
  nlohmann::json echo;  // the request's settings a response object repeats (tools, tool_choice, ...)
};

std::variant<OpenAiResponsesRequest, ApiError> map_openai_responses(const JsonBody& body, const ModelCatalogue& model);
const std::map<std::string, std::string>& openai_responses_param_names();

std::string responses_created_event(Generation& g);
std::string responses_token_events(Generation& g, const proto::StreamEvent& ev);
std::string responses_final_events(Generation& g, const proto::StreamEvent& finished);
nlohmann::json responses_object(Generation& g, const proto::StreamEvent& finished);

}  // namespace vks::http
