#pragma once
// Tool calling on the HTTP chat surfaces, shared by OpenAI /v1/chat/completions and Ollama
// /api/chat: the request's tools, tool_choice and parallel_tool_calls onto the wire `chat`
// request, an assistant turn's tool_calls onto the wire (arguments as a JSON string or an object),
// and a parsed call (engine/chat/tool_call_parser.h) as each API writes it.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>

#include "engine/chat/tool_call_parser.h"
#include "server/http/api_common.h"

namespace vks::http {

// tools, tool_choice ("auto" | "none" | "required" | {"type": "function", "function": {"name"}}),
// parallel_tool_calls -> the wire fields. `offered`: tools are on (given, and choice not "none").
// Call it after the response format is mapped: a forced call drops the wire's json_schema.
std::optional<ApiError> map_tools(const JsonBody& body, nlohmann::json& wire, bool& offered);

// An assistant message's tool_calls -> JSON text for the wire turn, or the error naming `where`.
std::variant<std::string, ApiError> wire_tool_calls(const JsonBody& calls, const std::string& where);

// body[key] when it is a string, "" when absent or null, or the 400 naming `where`.`key` (nlohmann's
// value() throws on a wrong type: a client's mistake must be its 400, not a 500).
std::variant<std::string, ApiError> optional_string(const JsonBody& body, const char* key, const std::string& where);
// The same for a boolean (`fallback` when absent or null).
std::variant<bool, ApiError> optional_bool(const JsonBody& body, const char* key, bool fallback, const std::string& where);

// The id a call gets: "call_" + the request id + "_" + its index in the answer.
std::string tool_call_id(const std::string& request_id, size_t index);
// Anthropic's tool_use block id: "toolu_" + the request id + "_" + the call's index in the answer.
std::string tool_use_id(const std::string& request_id, size_t index);

// OpenAI: {"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}, with
// "index" first when streamed.
nlohmann::json openai_tool_call(const chat::ToolCall& call, const std::string& request_id, size_t index, bool streamed);
// Ollama: {"function": {"name", "arguments": {...}}} (arguments as an object).
nlohmann::json ollama_tool_call(const chat::ToolCall& call);

}  // namespace vks::http
