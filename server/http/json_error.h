#pragma once
// Error bodies. Every HTTP error vkstreamd sends is JSON in OpenAI's shape
// {"error":{"message","type","param","code"}}; Ollama endpoints use {"error":"message"}.
#include <string>
#include <string_view>

namespace vks::http {

// OpenAI error "type" for an HTTP status ("invalid_request_error", "not_found_error", ...).
std::string_view error_type_for_status(int status);

// {"error":{"message":..., "type":..., "param":null|"...", "code":"..."}}; an empty param is null.
std::string openai_error_body(int status, std::string_view message, std::string_view code,
                              std::string_view param = {});

// {"error":"message"} (Ollama's shape).
std::string ollama_error_body(std::string_view message);

}  // namespace vks::http
