#include "server/http/json_body.h"

#include <string>

namespace vks::http {

namespace {

// Bounds nesting before parsing, so a body of 1 MB of '[' cannot exhaust the parser's stack.
bool nesting_within(const std::string& text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (ch == '\\') {
        escaped = true;
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max_depth) return false;
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return true;
}

}  // namespace

std::variant<JsonBody, ParseFailure> parse_json_object(const HttpRequest& request, bool allow_empty,
                                                             bool any_media_type) {
  const std::string media = request.media_type();
  if (!any_media_type && !media.empty() && media != "application/json" && !(media.size() > 5 && media.ends_with("+json"))) {
    return ParseFailure{415, "unsupported_media_type",
                        "Content-Type must be application/json, not '" + media + "'" +
                            (media == "application/x-www-form-urlencoded" ? " (curl: add -H 'Content-Type: application/json')" : "")};
  }
  if (request.body.empty()) {
    if (allow_empty) return JsonBody::object();
    return ParseFailure{400, "invalid_json", "the request body is empty; send a JSON object"};
  }
  if (!nesting_within(request.body, kMaxJsonDepth)) {
    return ParseFailure{400, "invalid_json", "the JSON body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
  }
  JsonBody parsed = JsonBody::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return ParseFailure{400, "invalid_json", "the request body is not valid JSON"};
  }
  if (!parsed.is_object()) {
    return ParseFailure{400, "invalid_json", "the request body must be a JSON object"};
  }
  return parsed;
}

}  // namespace vks::http
