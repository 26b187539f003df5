#include "server/http/cors.h"

#include <string_view>

namespace vks::http {
namespace {

// scheme://host[:port] with host localhost, 127.0.0.1 or [::1].
bool is_loopback_origin(std::string_view origin) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (!origin.starts_with(scheme)) continue;
    std::string_view host = origin.substr(scheme.size());
    for (std::string_view loopback : {"localhost", "127.0.0.1", "[::1]"}) {
      if (!host.starts_with(loopback)) continue;
      std::string_view rest = host.substr(loopback.size());
      if (rest.empty()) return true;
      if (rest.front() != ':' || rest.size() == 1 || rest.size() > 6) return false;
      for (char ch : rest.substr(1)) {
        if (ch < '0' || ch > '9') return false;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<std::string> allowed_origin(const HttpRequest& request, const std::vector<std::string>& extra) {
  const std::string* origin = request.header("origin");
  if (origin == nullptr || origin->empty()) return std::nullopt;
  if (is_loopback_origin(*origin)) return *origin;
  for (const std::string& allowed : extra) {
    if (allowed == "*" || allowed == *origin) return *origin;
  }
  return std::nullopt;
}

bool is_preflight(const HttpRequest& request) {
  return request.method == "OPTIONS" && request.header("access-control-request-method") != nullptr;
}

void add_cors_headers(HeaderList& headers, const std::optional<std::string>& origin) {
  if (!origin) return;
  headers.emplace_back("Access-Control-Allow-Origin", *origin);
  headers.emplace_back("Vary", "Origin");
}

HttpResponse preflight_response(const std::optional<std::string>& origin) {
  HttpResponse resp;
  if (!origin) {
    resp.status = 403;
    resp.content_type = "text/plain; charset=utf-8";
    resp.body = "origin not allowed (vkstreamd --http-cors ORIGIN)\n";
    return resp;
  }
  resp.status = 204;
  resp.content_type.clear();
  add_cors_headers(resp.headers, origin);
  resp.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");  // DELETE: /api/delete
  resp.headers.emplace_back("Access-Control-Allow-Headers",
                            "Authorization, Content-Type, x-api-key, x-request-id, anthropic-version, anthropic-beta, "
                            "OpenAI-Organization, OpenAI-Project, x-stainless-arch, x-stainless-lang, x-stainless-os, "
                            "x-stainless-package-version, x-stainless-retry-count, x-stainless-runtime, "
                            "x-stainless-runtime-version, x-stainless-timeout");
  resp.headers.emplace_back("Access-Control-Max-Age", "600");
  return resp;
}

}  // namespace vks::http
