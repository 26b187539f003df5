#include "server/http/http_message.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <random>

namespace vks::http {

const std::string* HttpRequest::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

std::string HttpRequest::media_type() const {
  const std::string* ct = header("content-type");
  if (ct == nullptr) return {};
  std::string type = ct->substr(0, ct->find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return type;
}

std::string random_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return hex;
}

std::string_view status_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string serialize_head(int status, std::string_view content_type, const HeaderList& headers,
                           int64_t content_length, bool keep_alive, bool http10) {
  std::string out;
  out.reserve(256);
  out += http10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += status_reason(status);
  out += "\r\n";
  if (!content_type.empty()) {
    out += "Content-Type: ";
    out += content_type;
    out += "\r\n";
  }
  for (const auto& [name, value] : headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (content_length >= 0) {
    out += "Content-Length: ";
    out += std::to_string(content_length);
    out += "\r\n";
  } else if (!http10) {
    out += "Transfer-Encoding: chunked\r\n";
  }
  if (http10) {
    out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  } else if (!keep_alive) {
    out += "Connection: close\r\n";
  }
  out += "\r\n";
  return out;
}

void append_chunk(std::string& out, std::string_view data) {
  char size[24];
  const int n = std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  out.append(size, static_cast<size_t>(n));
  out.append(data);
  out += "\r\n";
}

}  // namespace vks::http
