#pragma once
// Where the HTTP front end listens: "--http 8080" (loopback), "--http HOST:PORT",
// "--http [v6addr]:PORT" or "--http unix:/path/to.sock".
#include <cstdint>
#include <string>

namespace vks::http {

struct HttpEndpoint {
  bool is_unix = false;
  std::string host;   // tcp: numeric address or "localhost"
  uint16_t port = 0;  // tcp: 0 = any free port (tests)
  std::string path;   // unix

  // True for unix sockets and 127.0.0.0/8, ::1, localhost: no API key required.
  bool is_loopback() const;
  std::string describe() const;  // "http://127.0.0.1:8080" / "unix:/path"
};

// Throws vks::Error(kInvalidArgument) naming the problem.
HttpEndpoint parse_http_endpoint(const std::string& spec);

// Throws vks::Error(kInvalidArgument) for a non-loopback endpoint when `api_key` is empty.
void require_api_key_off_loopback(const HttpEndpoint& endpoint, const std::string& api_key);

}  // namespace vks::http
