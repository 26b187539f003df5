#pragma once
// Incremental HTTP/1.1 request parser over Debian's http-parser (nodejs/http-parser 2.9). It
// parses ONE request at a time: after a complete request it pauses and keeps the following
// (pipelined) bytes for later, so answers go out in request order. Enforces the header and body
// limits and what RFC 9112 requires that http-parser lets through (single spaces in the request
// line, token header names, no transfer coding but chunked); any failure is a status code (400,
// 413, 431, 501, 505) with a message to send back.
#include <http_parser.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/http/http_limits.h"
#include "server/http/http_message.h"

namespace vks::http {

struct ParseFailure {
  int status = 400;
  std::string code;     // "bad_request", "headers_too_large", "body_too_large", ...
  std::string message;
};

class HttpRequestParser {
 public:
  explicit HttpRequestParser(const HttpLimits& limits);
  HttpRequestParser(const HttpRequestParser&) = delete;
  HttpRequestParser& operator=(const HttpRequestParser&) = delete;

  // Adds bytes from the socket. Returns false once the stream is broken (see failure()).
  bool feed(std::string_view bytes);
  // The next complete request, if one is ready (then parsing pauses until the next call).
  std::optional<HttpRequest> next();

  const std::optional<ParseFailure>& failure() const { return failure_; }
  // The current request asked for `Expect: 100-continue` and its body has not started; the caller
  // answers "100 Continue" once (then call continue_sent()).
  bool wants_continue() const { return wants_continue_ && !continue_sent_; }
  void continue_sent() { continue_sent_ = true; }
  // Bytes of a request that is not complete yet, plus pipelined bytes waiting behind one.
  bool mid_request() const { return !complete_ && (started_ || !stash_.empty()); }
  size_t stashed_bytes() const { return stash_.size(); }

 private:
  static int on_message_begin(http_parser* p);
  static int on_url(http_parser* p, const char* at, size_t len);
  static int on_header_field(http_parser* p, const char* at, size_t len);
  static int on_header_value(http_parser* p, const char* at, size_t len);
  static int on_headers_complete(http_parser* p);
  static int on_body(http_parser* p, const char* at, size_t len);
  static int on_message_complete(http_parser* p);

  void run();  // parses stash_ until paused, done, or out of bytes
  bool fail(int status, std::string code, std::string message);
  bool count_header_bytes(size_t len);
  bool check_request_line();  // false: incomplete, or failed (see failure_)
  bool check_transfer_coding();
  void finish_header();

  HttpLimits limits_;
  http_parser parser_{};
  http_parser_settings settings_{};
  std::string stash_;            // unparsed bytes
  HttpRequest current_;
  std::string field_, value_;
  bool in_value_ = false;
  uint64_t header_bytes_ = 0;
  bool started_ = false;
  bool complete_ = false;
  bool line_checked_ = false;  // the current request's line passed request_line_error
  bool wants_continue_ = false;
  bool continue_sent_ = false;
  std::optional<ParseFailure> failure_;
};

}  // namespace vks::http
