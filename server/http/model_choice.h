#pragma once
// Which served model a request asks for, read before the model is resolved (loaded when needed):
// the body's `model` (absent or "" = the server's default) and, on Ollama's surfaces, keep_alive.
// Also the answers that depend on the set of served models rather than on one of them.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "protocol/errors.h"
#include "server/http/api_common.h"

namespace vks::http {

struct ModelChoice {
  std::string name;                  // as the client wrote it; "" = the default model
  std::optional<double> keep_alive;  // seconds (keep_alive.h); only Ollama's surfaces read it
  // Set by the front end as it resolves the model: when it asked, and how long the model took to
  // become ready (a load), so an answer's durations include the load as Ollama's do.
  std::chrono::steady_clock::time_point asked_at = std::chrono::steady_clock::now();
  int64_t load_ns = 0;
};

// `required`: Ollama's surfaces need a model; the others default to the server's. `keep_alive`:
// read the body's keep_alive (Ollama's semantics). A `model` that is not a string is a 400.
std::variant<ModelChoice, ApiError> read_model_choice(const JsonBody& body, bool required, bool keep_alive);

// The wire request routed to the resolved model: "model" = its id, "keep_alive" when the client sent it.
void add_model_fields(nlohmann::json& wire, const std::string& model_id, const std::optional<double>& keep_alive);

// A resolve_model failure as the API answers it: 404 not_found (the message lists the served
// names), 500 model_load_failed, 429 overloaded (+ Retry-After), 503 shutting_down.
ApiError model_resolve_error(const proto::ProtocolError& error);

// Ollama's "load/unload the model" calls: /api/generate without prompt (nor system), /api/chat
// without messages. With keep_alive 0 they unload instead of loading.
bool ollama_empty_prompt(const JsonBody& body, bool chat);

}  // namespace vks::http
