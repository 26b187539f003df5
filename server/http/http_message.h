#pragma once
// Plain HTTP/1.1 request and response values shared by the transport (http_connection) and the
// front end that maps endpoints onto the engine. No I/O here.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vks::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;   // "GET", "POST", ...
  std::string target;   // the request target as sent ("/v1/models?x=1")
  std::string path;     // target without the query ("/v1/models")
  std::string query;    // after '?', undecoded
  HeaderList headers;   // names lower-cased, values trimmed, in arrival order
  std::string body;     // de-chunked
  int version_major = 1;
  int version_minor = 1;
  bool keep_alive = true;

  // First header with this (lower-case) name, or nullptr.
  const std::string* header(std::string_view lower_name) const;
  // The media type of Content-Type, lower-cased, without parameters ("application/json").
  std::string media_type() const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  HeaderList headers;  // extra headers (x-request-id, Retry-After, ...)
  std::string body;
  bool close_connection = false;  // "Connection: close" and close after it, whatever the request asked
};

// A fresh random id (32 hex digits) for answers that belong to no generation: every answer carries
// an x-request-id.
std::string random_request_id();

// "OK", "Not Found", ...; "Unknown" for codes we never send.
std::string_view status_reason(int status);

// The status line and headers of a response, ending with the blank line. `content_length` < 0
// writes Transfer-Encoding: chunked (HTTP/1.1) or nothing (HTTP/1.0: the body ends at close).
std::string serialize_head(int status, std::string_view content_type, const HeaderList& headers,
                           int64_t content_length, bool keep_alive, bool http10);

// One chunk of a chunked body ("<hex size>\r\n<data>\r\n"); empty data is not allowed here.
void append_chunk(std::string& out, std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace vks::http
