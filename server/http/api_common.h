#pragma once
// Shared by the OpenAI and Ollama mappings: the served model's catalogue entry, API errors, and
// the bridge from an API's JSON to the msgpack wire `generate` request. Every HTTP generation is
// expressed as the wire request of docs/PROTOCOL.md and parsed by proto::parse_request, so limits,
// ranges and error messages are the same as on the Unix socket and ZeroMQ.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "engine/chat/reasoning.h"
#include "engine/chat/tool_format.h"
#include "protocol/errors.h"
#include "protocol/limits.h"
#include "protocol/requests.h"
#include "protocol/responses.h"
#include "server/http/json_body.h"
#include "server/http/json_text.h"

namespace vks::http {

struct ApiError {
  int status = 400;
  std::string message;
  std::string code;          // OpenAI "code" ("invalid_field", "model_not_found", ...)
  std::string param;         // the offending field in the API's own names; empty if none
  int32_t retry_after_s = 0; // 429: Retry-After
};

// A 400 error about one request field (`param`, in the API's own names).
ApiError bad_field(std::string message, std::string param, std::string code = "invalid_field");

// One model this daemon serves, as the HTTP APIs list it (the front end resolves each request's
// model to its entry first; the API mappers take the resolved entry).
struct ModelCatalogue {
  std::string id;             // the name clients use ("stories260K")
  proto::ModelInfo info;
  uint64_t file_bytes = 0;
  int64_t created_unix = 0;   // model file mtime
  std::string file_type;      // "Q4_0", "F32", ... (Ollama quantization_level)
  std::string digest;         // stable hex id of the file (size + mtime + name)
  chat::ToolCallFormat tool_format = chat::generic_tool_format();  // how the served template writes tool calls
  chat::ReasoningFormat reasoning;  // the served template's <think> block (none: it does not think)
  bool tied_embeddings = false;  // no output.weight: token_embd serves as the output projection too

  // "stories260K", "stories260K:latest", the file name: all this model. Empty = the default.
  bool matches(const std::string& requested) const;
};

// The wire generate map (JSON object with wire field names) → a validated GenerateMessage, or an
// ApiError whose param uses the API's names (`param_names`: wire field → API field).
std::variant<proto::GenerateMessage, ApiError> to_generate_message(
    nlohmann::json wire, const proto::ProtocolLimits& limits,
    const std::map<std::string, std::string>& param_names);

// The same for the wire `chat` request (messages + the generation fields; PROTOCOL.md 3.10).
std::variant<proto::ChatRequest, ApiError> to_chat_request(
    nlohmann::json wire, const proto::ProtocolLimits& limits,
    const std::map<std::string, std::string>& param_names);

// The same for the wire `embed` request (PROTOCOL.md 3.11).
std::variant<proto::EmbedRequest, ApiError> to_embed_request(
    nlohmann::json wire, const proto::ProtocolLimits& limits,
    const std::map<std::string, std::string>& param_names);

// A wire error (parse or submit) as an HTTP error: 400 field errors, 404 not_found, 409
// already_exists, 429 overloaded/too_many_requests (+ Retry-After), 503 shutting_down, 500 others.
ApiError api_error_from_wire(const proto::ProtocolError& error, int32_t retry_after_ms,
                             const std::map<std::string, std::string>& param_names);

// Copies body[api_name] to wire[wire_name] when present and not null.
void copy_field(const nlohmann::json& body, const char* api_name, nlohmann::json& wire, const char* wire_name);
void copy_field(const JsonBody& body, const char* api_name, nlohmann::json& wire, const char* wire_name);

std::string finish_reason_text(proto::FinishReason reason);  // "stop", "length", "cancelled", ...
int64_t unix_now();
std::string rfc3339_now();  // "2026-11-25T04:40:00.123456789Z" (Ollama's created_at)
std::string rfc3339_at(std::chrono::system_clock::time_point when);

}  // namespace vks::http
