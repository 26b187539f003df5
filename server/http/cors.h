#pragma once
// CORS for browser clients: pages served from localhost / 127.0.0.1 (any port, http or https),
// and the origins given with --http-cors, may call the API; no other origin gets the
// Access-Control-Allow-Origin header, so a page elsewhere cannot read answers. Preflights
// (OPTIONS with Access-Control-Request-Method) are answered 204 with the methods and headers
// the API uses, or 403 for an origin not allowed.
#include <optional>
#include <string>
#include <vector>

#include "server/http/http_message.h"

namespace vks::http {

// The request's Origin when it is allowed ("*" in `extra` allows every origin), else nullopt.
std::optional<std::string> allowed_origin(const HttpRequest& request, const std::vector<std::string>& extra);

// A preflight request: OPTIONS carrying Access-Control-Request-Method.
bool is_preflight(const HttpRequest& request);

// Adds Access-Control-Allow-Origin (and Vary: Origin) for an allowed origin.
void add_cors_headers(HeaderList& headers, const std::optional<std::string>& origin);

// The answer to a preflight: 204 with the allowed methods and headers, or 403.
HttpResponse preflight_response(const std::optional<std::string>& origin);

}  // namespace vks::http
