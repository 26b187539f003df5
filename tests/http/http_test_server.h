#pragma once
// An HttpServer on its own libuv loop thread with test endpoints, for transport tests:
//   /echo    -> 200 {"method","path","query","body","content_type"}
//   /json    -> the body parsed by parse_json_object (415/400 on bad input), echoed
//   /stream?n=K -> chunked answer with K chunks "chunk i\n"
//   /flood   -> a stream that writes 64 KiB chunks on a timer until the connection gives up
//   /hang    -> never answers (the connection's close is the only way out)
// Counters are read from the test thread.
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "server/http/http_server.h"

namespace vks::test {

class TestHttpServer {
 public:
  // Listens on 127.0.0.1:0 (and on unix_path when not empty), or adopts `adopt_fd` when >= 0.
  explicit TestHttpServer(const http::HttpLimits& limits, const std::string& unix_path = {}, int adopt_fd = -1,
                          bool refuse_unix_peers = false);
  ~TestHttpServer();
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  uint16_t port() const { return port_; }
  std::atomic<int> requests{0};
  std::atomic<int> closed_while_answering{0};  // connections that went away mid-answer
  std::atomic<int> closed{0};

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace vks::test
