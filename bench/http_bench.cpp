// http_bench: vkstreamd's HTTP front end against its Unix socket, same daemon, same workload.
//  1. added latency of a minimal request (greedy, max_tokens 1): HTTP POST /v1/completions (keep-alive,
//     loopback TCP, whole JSON answer) vs the Unix-socket generate until its `finished` event;
//  2. throughput at C concurrent streams (default 16): SSE /v1/completions vs Unix-socket streams,
//     tokens/s and their ratio (target >= 0.95).
// Rounds are interleaved, the order alternating (UDS then HTTP, HTTP then UDS, ...) so that drift in
// the machine's load favours neither; latency: medians; throughput: the per-round ratio's median and
// spread (min..max), and the best round of each.
// The Unix-socket side speaks the documented wire format (msgpack maps, 4-byte big-endian frames).
//   http_bench MODEL.gguf [--concurrency 16] [--requests 64] [--max-tokens 64] [--latency-runs 200]
//              [--rounds 3] [--cpu]
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int connect_unix(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int connect_tcp(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

void send_all(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    off += static_cast<size_t>(n);
  }
}

// Buffered reads from a socket.
class Reader {
 public:
  explicit Reader(int fd) : fd_(fd) {}
  void more() {
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) throw std::runtime_error("connection closed");
    buf_.append(buf, static_cast<size_t>(n));
  }
  std::string buf_;

 private:
  int fd_;
};

// True when GET /health answers 200 (false while nothing listens or the model still loads).
bool health_ok(uint16_t port) {
  const int fd = connect_tcp(port);
  if (fd < 0) return false;
  const std::string request = "GET /health HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
  std::string head;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[256];
    ssize_t n;
    while (head.size() < 12 && (n = ::recv(fd, buf, sizeof buf, 0)) > 0) head.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return head.compare(0, 12, "HTTP/1.1 200") == 0;
}

// ---- Unix socket (msgpack frames) ----

class UdsConn {
 public:
  explicit UdsConn(const std::string& path) : fd_(connect_unix(path)), in_(fd_) {
    if (fd_ < 0) throw std::runtime_error("cannot connect to " + path);
  }
  ~UdsConn() { close(fd_); }
  void send(const json& request) {
    const std::vector<uint8_t> payload = json::to_msgpack(request);
    std::string frame(4, '\0');
    const uint32_t n = static_cast<uint32_t>(payload.size());
    frame[0] = static_cast<char>(n >> 24);
    frame[1] = static_cast<char>(n >> 16);
    frame[2] = static_cast<char>(n >> 8);
    frame[3] = static_cast<char>(n);
    frame.append(payload.begin(), payload.end());
    send_all(fd_, frame);
  }
  json recv() {
    for (;;) {
      if (in_.buf_.size() >= 4) {
        const auto* b = reinterpret_cast<const unsigned char*>(in_.buf_.data());
        const size_t n = (size_t{b[0]} << 24) | (size_t{b[1]} << 16) | (size_t{b[2]} << 8) | b[3];
        if (in_.buf_.size() >= 4 + n) {
          json m = json::from_msgpack(in_.buf_.begin() + 4, in_.buf_.begin() + 4 + static_cast<std::ptrdiff_t>(n));
          in_.buf_.erase(0, 4 + n);
          return m;
        }
      }
      in_.more();
    }
  }
  // Sends a generate and reads its stream to `finished`; returns the generated token count.
  int64_t generate(int max_tokens) {
    send({{"type", "generate"}, {"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"temperature", 0},
          {"ignore_eos", true}});
    int64_t tokens = 0;
    for (;;) {
      const json m = recv();
      const std::string type = m.value("type", "");
      if (type == "error") throw std::runtime_error("server error: " + m.dump());
      if (type == "token" && m.contains("ids")) tokens += static_cast<int64_t>(m["ids"].size());
      if (type == "finished") return tokens;
    }
  }

 private:
  int fd_;
  Reader in_;
};

// ---- HTTP (keep-alive) ----

class HttpConn {
 public:
  explicit HttpConn(uint16_t port) : fd_(connect_tcp(port)), in_(fd_) {
    if (fd_ < 0) throw std::runtime_error("cannot connect to port " + std::to_string(port));
  }
  ~HttpConn() { close(fd_); }
  // POST /v1/completions; returns the completion tokens (from usage).
  int64_t complete(int max_tokens, bool stream) {
    json body = {{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
    if (stream) body.update({{"stream", true}, {"stream_options", {{"include_usage", true}}}});
    const std::string b = body.dump();
    send_all(fd_, "POST /v1/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(b.size()) + "\r\n\r\n" + b);
    size_t head_end;
    while ((head_end = in_.buf_.find("\r\n\r\n")) == std::string::npos) in_.more();
    const std::string head = in_.buf_.substr(0, head_end);
    in_.buf_.erase(0, head_end + 4);
    if (head.compare(0, 12, "HTTP/1.1 200") != 0) throw std::runtime_error("HTTP error: " + head);
    if (!stream) {
      const size_t cl = head.find("Content-Length: ");
      const size_t len = std::stoul(head.substr(cl + 16));
      while (in_.buf_.size() < len) in_.more();
      const json answer = json::parse(in_.buf_.substr(0, len));
      in_.buf_.erase(0, len);
      return answer["usage"]["completion_tokens"].get<int64_t>();
    }
    // Chunked SSE: read chunks until the last one; tokens from the usage chunk.
    int64_t tokens = 0;
    std::string events;
    for (;;) {
      size_t line_end;
      while ((line_end = in_.buf_.find("\r\n")) == std::string::npos) in_.more();
      const size_t size = std::stoul(in_.buf_.substr(0, line_end), nullptr, 16);
      while (in_.buf_.size() < line_end + 2 + size + 2) in_.more();
      events.append(in_.buf_, line_end + 2, size);
      in_.buf_.erase(0, line_end + 2 + size + 2);
      if (size == 0) break;
    }
    const size_t usage = events.rfind("\"completion_tokens\":");
    if (usage != std::string::npos) tokens = std::stoll(events.substr(usage + 20));
    if (events.find("data: [DONE]") == std::string::npos) throw std::runtime_error("stream without [DONE]");
    return tokens;
  }

 private:
  int fd_;
  Reader in_;
};

struct Throughput {
  int64_t tokens = 0;
  double seconds = 0;
  double per_s() const { return seconds > 0 ? static_cast<double>(tokens) / seconds : 0; }
};

// `requests` requests over `concurrency` connections, each worker made by make_worker on its thread.
Throughput run_concurrent(int concurrency, int requests, const std::function<std::function<int64_t()>()>& make_worker) {
  std::atomic<int64_t> tokens{0};
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int i = 0; i < concurrency; ++i) {
    threads.emplace_back([&] {
      auto work = make_worker();
      while (next.fetch_add(1) < requests) tokens += work();
    });
  }
  for (auto& t : threads) t.join();
  return Throughput{tokens.load(), ms_since(t0) / 1000.0};
}

uint16_t free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"http_bench: vkstreamd's HTTP API vs its Unix socket"};
  std::string model;
  int requests = 64;
  int max_tokens = 64;
  int concurrency = 16;
  int latency_runs = 200;
  int rounds = 3;
  bool cpu = false;
  std::string daemon = VKS_DAEMON_PATH;
  app.add_option("model", model, "GGUF model")->required();
  app.add_option("--requests", requests, "requests per throughput round")->capture_default_str();
  app.add_option("--max-tokens", max_tokens)->capture_default_str();
  app.add_option("--concurrency", concurrency)->capture_default_str();
  app.add_option("--latency-runs", latency_runs, "sequential minimal requests per round")->capture_default_str();
  app.add_option("--rounds", rounds)->capture_default_str();
  app.add_flag("--cpu", cpu, "run the daemon on the CPU reference");
  app.add_option("--daemon", daemon, "vkstreamd binary")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (rounds < 1 || concurrency < 1 || requests < 1 || max_tokens < 1) {
    std::fprintf(stderr, "http_bench: --rounds, --concurrency, --requests and --max-tokens must be >= 1\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);

  char dir_template[] = "/tmp/vks-http-bench-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string sock = dir + "/vkstream.sock";
  const uint16_t port = free_port();
  std::vector<std::string> args = {daemon, "--model", model, "--socket", sock, "--zmq", "ipc://" + dir + "/router.zmq",
                                   "--pub", "ipc://" + dir + "/pub.zmq", "--http", "127.0.0.1:" + std::to_string(port),
                                   "--log-level", "warn", "--max-seqs", std::to_string(std::max(16, concurrency))};
  if (cpu) args.push_back("--cpu");
  std::vector<char*> argv_c;
  for (auto& a : args) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, daemon.c_str(), nullptr, nullptr, argv_c.data(), environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", daemon.c_str());
    return 1;
  }
  int rc = 0;
  try {
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    // The HTTP port answers 503 while the model loads: wait for /health to say 200.
    while (!health_ok(port)) {
      if (Clock::now() > deadline) throw std::runtime_error("vkstreamd did not start");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    UdsConn warm_uds(sock);
    HttpConn warm_http(port);
    for (int i = 0; i < 3; ++i) {  // first dispatches compile kernels: not measured
      warm_uds.generate(max_tokens);
      warm_http.complete(max_tokens, true);
    }
    std::printf("http_bench: %s, %d concurrent streams x %d requests of %d tokens, %d latency runs, %d rounds\n",
                model.c_str(), concurrency, requests, max_tokens, latency_runs, rounds);
    std::vector<double> uds_lat, http_lat, ratios;
    Throughput best_uds, best_http;
    for (int round = 0; round < rounds; ++round) {
      for (int i = 0; i < latency_runs; ++i) {
        auto t0 = Clock::now();
        warm_uds.generate(1);
        uds_lat.push_back(ms_since(t0));
        t0 = Clock::now();
        warm_http.complete(1, false);
        http_lat.push_back(ms_since(t0));
      }
      auto uds_round = [&] {
        return run_concurrent(concurrency, requests, [&] {
          auto conn = std::make_shared<UdsConn>(sock);
          return std::function<int64_t()>([conn, max_tokens] { return conn->generate(max_tokens); });
        });
      };
      auto http_round = [&] {
        return run_concurrent(concurrency, requests, [&] {
          auto conn = std::make_shared<HttpConn>(port);
          return std::function<int64_t()>([conn, max_tokens] { return conn->complete(max_tokens, true); });
        });
      };
      Throughput u, h;
      if (round % 2 == 0) {
        u = uds_round();
        h = http_round();
      } else {
        h = http_round();
        u = uds_round();
      }
      const double ratio = u.per_s() > 0 ? h.per_s() / u.per_s() : 0.0;
      ratios.push_back(ratio);
      std::printf("round %d (%s first): unix socket %.1f tok/s, HTTP SSE %.1f tok/s (ratio %.3f)\n", round + 1,
                  round % 2 == 0 ? "unix socket" : "HTTP", u.per_s(), h.per_s(), ratio);
      if (u.per_s() > best_uds.per_s()) best_uds = u;
      if (h.per_s() > best_http.per_s()) best_http = h;
    }
    const double mu = median(uds_lat);
    const double mh = median(http_lat);
    std::printf("minimal request (max_tokens 1), median of %zu: unix socket %.3f ms, HTTP %.3f ms, added %.3f ms\n",
                uds_lat.size(), mu, mh, mh - mu);
    std::printf("throughput at %d streams (best round): unix socket %.1f tok/s, HTTP %.1f tok/s, ratio %.3f "
                "(target >= 0.95)\n",
                concurrency, best_uds.per_s(), best_http.per_s(),
                best_uds.per_s() > 0 ? best_http.per_s() / best_uds.per_s() : 0.0);
    std::printf("throughput ratio HTTP / unix socket at %d streams over %zu interleaved rounds: median %.3f, "
                "spread %.3f..%.3f\n",
                concurrency, ratios.size(), median(ratios), *std::min_element(ratios.begin(), ratios.end()),
                *std::max_element(ratios.begin(), ratios.end()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "http_bench: %s\n", e.what());
    rc = 1;
  }
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  rmdir(dir.c_str());
  return rc;
}
