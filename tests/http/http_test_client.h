#pragma once
// Raw-socket HTTP client for transport tests: connect, write bytes as they are, read one response
// (Content-Length, chunked, or until close), with timeouts. Never throws.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vks::test {

struct RawResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;                                           // de-chunked
  bool chunked = false;
  const std::string* header(std::string_view lower_name) const;
};

class RawHttpClient {
 public:
  RawHttpClient() = default;
  ~RawHttpClient();
  RawHttpClient(const RawHttpClient&) = delete;
  RawHttpClient& operator=(const RawHttpClient&) = delete;
  RawHttpClient(RawHttpClient&& other) noexcept;

  bool connect_tcp(uint16_t port);
  bool connect_unix(const std::string& path);
  bool send(std::string_view bytes);
  // One response; nullopt on timeout, close before a full response, or garbage.
  std::optional<RawResponse> read_response(int timeout_ms = 5000);
  // Everything until the server closes (or the timeout); for streams that end at close.
  std::string read_until_close(int timeout_ms = 5000);
  // True when the server closed the connection (EOF or reset) within the timeout.
  bool wait_closed(int timeout_ms);
  void close();
  int fd() const { return fd_; }
  // Bytes read but not consumed by a response yet.
  const std::string& pending() const { return buffer_; }

 private:
  bool fill(int timeout_ms);  // reads more into buffer_; false on EOF/error/timeout
  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

// "POST /path HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: N\r\n\r\nbody"
std::string http_request(std::string_view method, std::string_view path, std::string_view body = {},
                         std::string_view extra_headers = {});

// One counter or gauge of a Prometheus text exposition: the value of the first series named `name`
// (any labels), -1 when there is none.
double prometheus_value(const std::string& text, const std::string& name);
// GET /metrics from the HTTP server on the Unix socket `path`, then prometheus_value; -1 when the
// scrape fails.
double scrape_metric(const std::string& path, const std::string& name);

}  // namespace vks::test
