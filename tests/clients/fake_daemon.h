#pragma once
// A scripted stand-in for vkstreamd on a Unix socket, for unit tests of the client library's
// framing, answer matching and error handling (no model, no engine).
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "vkstream/value.h"

namespace vks::test {

class FakeDaemon {
 public:
  // For each request map received, the handler returns the payloads (msgpack maps) to send back.
  // Returning {"<close>"} closes the connection instead.
  using Handler = std::function<std::vector<vkstream::Value>(const vkstream::Value& request)>;

  explicit FakeDaemon(Handler handler);
  ~FakeDaemon();
  FakeDaemon(const FakeDaemon&) = delete;
  FakeDaemon& operator=(const FakeDaemon&) = delete;

  const std::string& socket_path() const { return path_; }
  // Sends raw bytes (not framed) on the current connection, for malformed-frame tests.
  void set_raw_reply(std::string bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    raw_reply_ = std::move(bytes);
  }

  static vkstream::Value close_marker() { return vkstream::Value("<close>"); }
  // Sends what the handler returned before it, then waits `ms` before sending the rest (paced events).
  static vkstream::Value pause_marker(int ms) { return vkstream::Value("<pause " + std::to_string(ms) + ">"); }

 private:
  void serve();
  Handler handler_;
  std::string dir_;
  std::string path_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string raw_reply_;  // under mu_
  std::thread thread_;
};

// The answer a daemon sends to `request`: its type, the request's tag, then `fields`.
inline vkstream::Value answer(const vkstream::Value& request, const std::string& type,
                              vkstream::Value::Map fields = {}) {
  vkstream::Value v = vkstream::Value::Map{{"type", vkstream::Value(type)}, {"tag", *request.find("tag")}};
  for (auto& [k, f] : fields) v.set(k, f);
  return v;
}

}  // namespace vks::test
