#include "server/http/http_endpoint.h"

#include <charconv>

#include "engine/common/error.h"

namespace vks::http {

namespace {

[[noreturn]] void bad(const std::string& spec, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument,
              "--http " + spec + ": " + why + " (use PORT, HOST:PORT, [IPV6]:PORT or unix:PATH)");
}

uint16_t parse_port(const std::string& spec, const std::string& text) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > 65535) {
    bad(spec, "'" + text + "' is not a port number (0..65535)");
  }
  return static_cast<uint16_t>(value);
}

}  // namespace

bool HttpEndpoint::is_loopback() const {
  if (is_unix) return true;
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string HttpEndpoint::describe() const {
  if (is_unix) return "unix:" + path;
  const bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

HttpEndpoint parse_http_endpoint(const std::string& spec) {
  HttpEndpoint e;
  if (spec.rfind("unix:", 0) == 0) {
    e.is_unix = true;
    e.path = spec.substr(5);
    if (e.path.empty()) bad(spec, "the unix socket path is empty");
    if (e.path.size() >= 108) bad(spec, "the unix socket path is longer than 107 bytes");
    return e;
  }
  if (spec.empty()) bad(spec, "empty address");
  if (spec[0] == '[') {
    const size_t close = spec.find(']');
    if (close == std::string::npos || close + 1 >= spec.size() || spec[close + 1] != ':') {
      bad(spec, "an IPv6 address needs the form [ADDR]:PORT");
    }
    e.host = spec.substr(1, close - 1);
    e.port = parse_port(spec, spec.substr(close + 2));
    return e;
  }
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos) {
    e.host = "127.0.0.1";
    e.port = parse_port(spec, spec);
    return e;
  }
  e.host = spec.substr(0, colon);
  if (e.host.empty()) bad(spec, "empty host");
  e.port = parse_port(spec, spec.substr(colon + 1));
  return e;
}

void require_api_key_off_loopback(const HttpEndpoint& endpoint, const std::string& api_key) {
  if (endpoint.is_loopback() || !api_key.empty()) return;
  throw Error(ErrorCode::kInvalidArgument,
              "--http " + endpoint.describe() + " is not a loopback address: pass --api-key (clients send it as "
              "'Authorization: Bearer KEY'), or listen on 127.0.0.1 / unix:PATH");
}

}  // namespace vks::http
