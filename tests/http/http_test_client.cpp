#include "tests/http/http_test_client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace vks::test {

const std::string* RawResponse::header(std::string_view lower_name) const {
  for (const auto& [n, v] : headers) {
    if (n == lower_name) return &v;
  }
  return nullptr;
}

RawHttpClient::~RawHttpClient() { close(); }

RawHttpClient::RawHttpClient(RawHttpClient&& other) noexcept
    : fd_(other.fd_), buffer_(std::move(other.buffer_)), eof_(other.eof_) {
  other.fd_ = -1;
}

void RawHttpClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawHttpClient::connect_tcp(uint16_t port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close();
    return false;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return true;
}

bool RawHttpClient::connect_unix(const std::string& path) {
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close();
    return false;
  }
  return true;
}

bool RawHttpClient::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool RawHttpClient::fill(int timeout_ms) {
  if (fd_ < 0 || eof_) return false;
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return false;
  char buf[65536];
  const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(buf, static_cast<size_t>(n));
  return true;
}

std::optional<RawResponse> RawHttpClient::read_response(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto left = [&] {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count()));
  };
  for (;;) {
    size_t head_end = buffer_.find("\r\n\r\n");
    if (head_end == std::string::npos) {
      if (!fill(left())) return std::nullopt;
      continue;
    }
    RawResponse r;
    const std::string head = buffer_.substr(0, head_end);
    if (head.rfind("HTTP/1.", 0) != 0 || head.size() < 12) return std::nullopt;
    r.status = std::atoi(head.c_str() + 9);
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos < head.size()) {
      const size_t next = head.find("\r\n", pos + 2);
      const std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        r.headers.emplace_back(name, value);
      }
      pos = next;
    }
    size_t body_start = head_end + 4;
    if (r.status == 100) {  // interim answer: hand it out on its own
      buffer_.erase(0, body_start);
      return r;
    }
    if (const std::string* cl = r.header("content-length")) {
      const size_t len = static_cast<size_t>(std::stoull(*cl));
      while (buffer_.size() < body_start + len) {
        if (!fill(left())) return std::nullopt;
      }
      r.body = buffer_.substr(body_start, len);
      buffer_.erase(0, body_start + len);
      return r;
    }
    const std::string* te = r.header("transfer-encoding");
    if (te != nullptr && *te == "chunked") {
      r.chunked = true;
      size_t p = body_start;
      for (;;) {
        size_t line_end = buffer_.find("\r\n", p);
        while (line_end == std::string::npos) {
          if (!fill(left())) return std::nullopt;
          line_end = buffer_.find("\r\n", p);
        }
        const size_t size = std::stoul(buffer_.substr(p, line_end - p), nullptr, 16);
        const size_t data = line_end + 2;
        while (buffer_.size() < data + size + 2) {
          if (!fill(left())) return std::nullopt;
        }
        if (size == 0) {
          buffer_.erase(0, data + 2);
          return r;
        }
        r.body.append(buffer_, data, size);
        p = data + size + 2;
      }
    }
    // Until close.
    while (fill(left())) {
    }
    r.body = buffer_.substr(body_start);
    buffer_.clear();
    return r;
  }
}

std::string RawHttpClient::read_until_close(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    const int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (!fill(std::max(1, left))) break;
  }
  std::string out = std::move(buffer_);
  buffer_.clear();
  return out;
}

bool RawHttpClient::wait_closed(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!eof_) {
    const int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, left) <= 0) return false;
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) eof_ = true;
  }
  return true;
}

std::string http_request(std::string_view method, std::string_view path, std::string_view body,
                         std::string_view extra_headers) {
  std::string r;
  r += method;
  r += ' ';
  r += path;
  r += " HTTP/1.1\r\nHost: test\r\n";
  r += extra_headers;
  if (!body.empty() || method == "POST") {
    r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  r += "\r\n";
  r += body;
  return r;
}

double prometheus_value(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name, 0) != 0) continue;
    size_t at = name.size();
    if (at < line.size() && line[at] == '{') {  // the series' labels
      at = line.find('}', at);
      if (at == std::string::npos) continue;
      ++at;
    }
    if (at >= line.size() || line[at] != ' ') continue;  // another metric whose name starts with this one
    const char* value = line.c_str() + at + 1;
    char* end = nullptr;
    const double v = std::strtod(value, &end);
    if (end != value) return v;
  }
  return -1;
}

double scrape_metric(const std::string& path, const std::string& name) {
  RawHttpClient c;
  if (!c.connect_unix(path) || !c.send(http_request("GET", "/metrics"))) return -1;
  const std::optional<RawResponse> r = c.read_response(10000);
  return r ? prometheus_value(r->body, name) : -1;
}

}  // namespace vks::test
