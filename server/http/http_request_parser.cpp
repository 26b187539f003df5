#include "server/http/http_request_parser.h"

#include <algorithm>
#include <cctype>

namespace vks::http {

namespace {

HttpRequestParser* self_of(http_parser* p) { return static_cast<HttpRequestParser*>(p->data); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

}  // namespace

HttpRequestParser::HttpRequestParser(const HttpLimits& limits) : limits_(limits) {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  http_parser_settings_init(&settings_);
  settings_.on_message_begin = &HttpRequestParser::on_message_begin;
  settings_.on_url = &HttpRequestParser::on_url;
  settings_.on_header_field = &HttpRequestParser::on_header_field;
  settings_.on_header_value = &HttpRequestParser::on_header_value;
  settings_.on_headers_complete = &HttpRequestParser::on_headers_complete;
  settings_.on_body = &HttpRequestParser::on_body;
  settings_.on_message_complete = &HttpRequestParser::on_message_complete;
}

bool HttpRequestParser::fail(int status, std::string code, std::string message) {
  if (!failure_) failure_ = ParseFailure{status, std::move(code), std::move(message)};
  return false;
}

bool HttpRequestParser::feed(std::string_view bytes) {
  if (failure_) return false;
  stash_.append(bytes);
  if (!complete_) run();
  return !failure_;
}

std::optional<HttpRequest> HttpRequestParser::next() {
  if (failure_) return std::nullopt;
  if (!complete_) {
    run();
    if (!complete_) return std::nullopt;
  }
  HttpRequest done = std::move(current_);
  current_ = HttpRequest{};
  complete_ = false;
  started_ = false;
  wants_continue_ = continue_sent_ = false;
  if (HTTP_PARSER_ERRNO(&parser_) == HPE_PAUSED) http_parser_pause(&parser_, 0);
  return done;
}

void HttpRequestParser::run() {
  if (failure_ || complete_ || stash_.empty()) return;
  const size_t used = http_parser_execute(&parser_, &settings_, stash_.data(), stash_.size());
  const auto err = HTTP_PARSER_ERRNO(&parser_);
  if (err == HPE_PAUSED) {
    stash_.erase(0, used);
    return;
  }
  if (err != HPE_OK) {
    if (failure_) return;  // a callback already said why
    if (err == HPE_HEADER_OVERFLOW) {
      fail(431, "headers_too_large", "request headers are larger than " +
                                         std::to_string(limits_.max_header_bytes) + " bytes");
    } else {
      fail(400, "bad_request", std::string("malformed HTTP request: ") + http_errno_description(err));
    }
    return;
  }
  stash_.erase(0, used);
}

bool HttpRequestParser::count_header_bytes(size_t len) {
  header_bytes_ += len;
  if (header_bytes_ > limits_.max_header_bytes) {
    return fail(431, "headers_too_large", "request line and headers are larger than " +
                                              std::to_string(limits_.max_header_bytes) + " bytes");
  }
  return true;
}

void HttpRequestParser::finish_header() {
  if (!field_.empty() || in_value_) current_.headers.emplace_back(lower(field_), trim(value_));
  field_.clear();
  value_.clear();
  in_value_ = false;
}

int HttpRequestParser::on_message_begin(http_parser* p) {
  auto* self = self_of(p);
  self->current_ = HttpRequest{};
  self->field_.clear();
  self->value_.clear();
  self->in_value_ = false;
  self->header_bytes_ = 0;
  self->started_ = true;
  return 0;
}

int HttpRequestParser::on_url(http_parser* p, const char* at, size_t len) {
  auto* self = self_of(p);
  if (!self->count_header_bytes(len)) return 1;
  self->current_.target.append(at, len);
  return 0;
}

int HttpRequestParser::on_header_field(http_parser* p, const char* at, size_t len) {
  auto* self = self_of(p);
  if (!self->count_header_bytes(len)) return 1;
  if (self->in_value_) self->finish_header();
  self->field_.append(at, len);
  return 0;
}

int HttpRequestParser::on_header_value(http_parser* p, const char* at, size_t len) {
  auto* self = self_of(p);
  if (!self->count_header_bytes(len)) return 1;
  self->in_value_ = true;
  self->value_.append(at, len);
  return 0;
}

int HttpRequestParser::on_headers_complete(http_parser* p) {
  auto* self = self_of(p);
  self->finish_header();
  HttpRequest& r = self->current_;
  r.method = http_method_str(static_cast<http_method>(p->method));
  r.version_major = p->http_major;
  r.version_minor = p->http_minor;
  if (r.version_major != 1) {
    self->fail(505, "http_version_not_supported",
               "HTTP/" + std::to_string(r.version_major) + "." + std::to_string(r.version_minor) +
                   " is not supported; speak HTTP/1.1");
    return -1;
  }
  if (r.target.empty() || (r.target[0] != '/' && r.target != "*")) {
    self->fail(400, "bad_request", "the request target must be an absolute path such as /v1/models");
    return -1;
  }
  const size_t q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos) r.query = r.target.substr(q + 1);
  if ((p->flags & F_CONTENTLENGTH) != 0 && p->content_length > self->limits_.max_body_bytes) {
    self->fail(413, "body_too_large", "request body of " + std::to_string(p->content_length) +
                                          " bytes is larger than the limit of " +
                                          std::to_string(self->limits_.max_body_bytes) + " bytes");
    return -1;
  }
  if (const std::string* expect = r.header("expect")) {
    if (lower(*expect) != "100-continue") {
      self->fail(417, "expectation_failed", "only 'Expect: 100-continue' is supported");
      return -1;
    }
    self->wants_continue_ = true;
  }
  return 0;
}

int HttpRequestParser::on_body(http_parser* p, const char* at, size_t len) {
  auto* self = self_of(p);
  self->wants_continue_ = false;  // the client did not wait
  if (self->current_.body.size() + len > self->limits_.max_body_bytes) {
    self->fail(413, "body_too_large", "request body is larger than the limit of " +
                                          std::to_string(self->limits_.max_body_bytes) + " bytes");
    return -1;
  }
  self->current_.body.append(at, len);
  return 0;
}

int HttpRequestParser::on_message_complete(http_parser* p) {
  auto* self = self_of(p);
  self->current_.keep_alive = http_should_keep_alive(p) != 0;
  self->complete_ = true;
  http_parser_pause(p, 1);  // one request at a time: answers go out in order
  return 0;
}

}  // namespace vks::http
