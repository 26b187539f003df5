#pragma once
// Ollama's keep_alive on /api/generate, /api/chat, /api/embed and /api/embeddings: how long the
// model stays loaded after this request. Parsed as Ollama parses it (its api.Duration): a JSON
// number is seconds; a string is a Go duration ("5m", "1h30m", "300ms", "-1m") or, failing
// that, whole seconds ("300", "-1", "0"). Negative = keep it loaded; 0 = unload once idle.
#include <optional>
#include <string>
#include <variant>

#include "server/http/api_common.h"

namespace vks::http {

// Seconds, as the wire's keep_alive carries them: negative values are -1 (forever), positive ones
// at most a year (the wire's bound; a year is "forever" in practice). Anything else (a bool, an
// object, "5 minutes", "1d") is a 400 naming keep_alive.
std::variant<double, ApiError> parse_keep_alive(const JsonBody& value);

// A Go duration string ("1h30m", "1.5s", "-2m", "0") in seconds; nullopt when it is not one.
std::optional<double> parse_go_duration(const std::string& text);

// The body's keep_alive (absent or null: nullopt), or the 400 that says why not.
std::variant<std::optional<double>, ApiError> read_keep_alive(const JsonBody& body);

}  // namespace vks::http
