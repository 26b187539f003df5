#pragma once
// A request's JSON body, checked the same way for every endpoint: media type application/json (or
// none; any when `any_media_type`, as Ollama's API, whose documented examples are `curl -d` with
// curl's default form type), at most kMaxJsonDepth levels, an object at the top. Errors are ParseFailure with a status
// (415, 400) and a message that says what to fix.
#include <nlohmann/json.hpp>

#include <optional>
#include <variant>

#include "server/http/http_message.h"
#include "server/http/http_request_parser.h"

namespace vks::http {

inline constexpr int kMaxJsonDepth = 32;

// The parsed object, or why not. `allow_empty`: an empty body reads as {}. Objects keep the
// client's key order: a JSON Schema's properties are generated in the order it declares them.
using JsonBody = nlohmann::ordered_json;
std::variant<JsonBody, ParseFailure> parse_json_object(const HttpRequest& request, bool allow_empty = false,
                                                             bool any_media_type = false);

}  // namespace vks::http
