#pragma once
// Ollama-compatible POST /api/chat mapped onto the wire `chat` request (the conversation rendered
// with the model's chat template, PROTOCOL.md 3.10): NDJSON lines {message: {role, content}, done}
// by default, the last one with done_reason, counts and durations in ns.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <variant>

#include "server/http/api_common.h"
#include "server/http/generation.h"

namespace vks::http {

struct OllamaChatRequest {
  nlohmann::json wire;
  bool stream = true;
  bool load_only = false;  // no messages: Ollama's "load the model" request, answered done at once
  std::optional<chat::ToolCallParser> tools;  // tools offered: the answer's parser
  bool show_reasoning = true;                  // think is not false: message.thinking
};

std::variant<OllamaChatRequest, ApiError> map_ollama_chat(const JsonBody& body, const ModelCatalogue& model);
const std::map<std::string, std::string>& ollama_chat_param_names();

// One NDJSON line for a token event ("" when it carries no text). With tools: the text and the
// calls (message.tool_calls, arguments as objects) the parser settled.
std::string ollama_chat_line(Generation& g, const proto::StreamEvent& ev);
// Streamed with tools: a line with what the parser still held at the end ("" if nothing).
std::string ollama_chat_held_line(Generation& g);
// The final object: message {role: "assistant", content: the whole reply or ""}, done: true,
// done_reason, prompt_eval_count, eval_count and durations (as /api/generate's).
nlohmann::json ollama_chat_final(Generation& g, const proto::StreamEvent& finished, bool with_text);
// The answer to a load request (no messages), or with done_reason "unload" to keep_alive 0.
nlohmann::json ollama_chat_loaded(const ModelCatalogue& model, const std::string& done_reason = "load");

}  // namespace vks::http
