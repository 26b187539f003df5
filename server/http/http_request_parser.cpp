#include "server/http/http_request_parser.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

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

// RFC 9110 tchar: what a method or a header name may be made of.
bool is_tchar(unsigned char c) {
  return std::isalnum(c) != 0 || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

// RFC 9112 3: request-line = method SP request-target SP HTTP-version, single spaces. http-parser
// accepts runs of spaces, which a proxy in front may split differently (request smuggling).
// Returns why the line is malformed, or empty.
std::string request_line_error(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return "the request line must be METHOD, target and version separated by single spaces";
  }
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(line.substr(0, sp1))) return "the request line's method is not a token";
  if (target.empty() || std::any_of(target.begin(), target.end(), [](char c) {
        return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
      })) {
    return "the request target is empty or holds a space or control character";
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || std::isdigit(static_cast<unsigned char>(version[5])) == 0 ||
      version[6] != '.' || std::isdigit(static_cast<unsigned char>(version[7])) == 0) {
    return "the request line must end with a version such as HTTP/1.1";
  }
  return {};
}

std::vector<std::string> split_list(const std::string& value) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t comma = std::min(value.find(',', start), value.size());
    items.push_back(lower(trim(value.substr(start, comma - start))));
    start = comma + 1;
  }
  return items;
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
  line_checked_ = false;
  wants_continue_ = continue_sent_ = false;
  if (HTTP_PARSER_ERRNO(&parser_) == HPE_PAUSED) http_parser_pause(&parser_, 0);
  return done;
}

bool HttpRequestParser::check_request_line() {
  if (line_checked_) return true;
  size_t start = 0;  // http-parser skips empty lines before a request; so does the check
  while (start < stash_.size() && (stash_[start] == '\r' || stash_[start] == '\n')) ++start;
  const size_t eol = stash_.find('\n', start);
  if (eol == std::string::npos) {
    // Incomplete: parse nothing until the line is whole (a line past the header limit is left
    // to the parser, which answers 431).
    return stash_.size() - start > limits_.max_header_bytes;
  }
  const std::string why = request_line_error(std::string_view(stash_).substr(start, eol - start));
  if (!why.empty()) return fail(400, "bad_request", "malformed HTTP request: " + why);
  line_checked_ = true;
  return true;
}

void HttpRequestParser::run() {
  if (failure_ || complete_ || stash_.empty()) return;
  if (!check_request_line()) return;
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
  for (const auto& [name, value] : r.headers) {
    if (!is_token(name)) {
      // e.g. "Content-Length : 5", which http-parser honours as Content-Length (RFC 9112 5.1).
      self->fail(400, "bad_request", "malformed HTTP request: invalid header name '" + name + "'");
      return -1;
    }
  }
  if (!self->check_transfer_coding()) return -1;
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

// RFC 9112 6.1: the only coding served is `chunked`, once and last. http-parser ignores any other
// coding before it (`gzip, chunked` would be read as plain chunked) and accepts it twice.
bool HttpRequestParser::check_transfer_coding() {
  int chunked = 0;
  for (const auto& [name, value] : current_.headers) {
    if (name != "transfer-encoding") continue;
    for (const std::string& coding : split_list(value)) {
      if (coding == "chunked") {
        ++chunked;
      } else {
        return fail(501, "not_implemented",
                    "transfer coding '" + coding + "' is not supported; send the body plain or chunked");
      }
    }
  }
  if (chunked > 1) return fail(400, "bad_request", "malformed HTTP request: transfer coding 'chunked' given twice");
  return true;
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
