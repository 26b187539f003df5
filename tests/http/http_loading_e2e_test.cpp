// End to end: vkstreamd --http while the model loads (held open by tests/server/held_load.h as
// long as the test needs). From the moment the port first accepts a connection it never refuses one again; GET /health answers 503 {"status":"loading"} at least once, then 200 on
// the same port; a generation asked for meanwhile is 503 JSON, and one asked for after is served.
// A load that fails still exits 1 with its message and leaves no HTTP socket file behind.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <csignal>
#include <fstream>
#include <thread>

#include "tests/http/http_test_client.h"
#include "tests/server/daemon_harness.h"
#include "tests/server/held_load.h"

namespace vks::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kCompletion = R"({"model":"stories260K","prompt":"Once upon a time","max_tokens":4,"temperature":0})";

// A loopback port nobody listens on now (the daemon binds it a moment later).
uint16_t free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) close(fd);
    return 0;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::optional<RawResponse> ask(uint16_t port, const std::string& method, const std::string& path,
                               const std::string& body = {}) {
  RawHttpClient c;
  if (!c.connect_tcp(port) || !c.send(http_request(method, path, body))) return std::nullopt;
  return c.read_response(30000);
}

TEST(HttpLoadingE2e, HealthIs503WhileLoadingThen200OnTheSamePortWithNoRefusedConnect) {
  TempDir dir;
  const uint16_t port = free_port();
  ASSERT_NE(port, 0);
  const std::string fifo = held_load_fifo(dir.path);
  ASSERT_FALSE(fifo.empty());
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.extra_args = {"--cpu", "--chat-template", fifo, "--http", "127.0.0.1:" + std::to_string(port),
                       "--http", "unix:" + dir.path + "/http.sock"};
  daemon.start(config);

  int health_loading = 0;
  int completions_loading = 0;
  int refused_after_listening = 0;
  bool listening = false;
  bool released = false;
  bool serving = false;
  const auto deadline = Clock::now() + std::chrono::seconds(90);
  while (!serving && Clock::now() < deadline) {
    RawHttpClient c;
    if (!c.connect_tcp(port)) {
      if (listening) ++refused_after_listening;
      ASSERT_TRUE(daemon.running()) << daemon.log();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    listening = true;
    ASSERT_TRUE(c.send(http_request("GET", "/health")));
    auto r = c.read_response(30000);
    ASSERT_TRUE(r) << daemon.log();
    if (r->status == 200) {
      EXPECT_EQ(json::parse(r->body)["status"], "ok");
      serving = true;
      break;
    }
    ASSERT_EQ(r->status, 503) << r->body;
    ASSERT_EQ(json::parse(r->body), json({{"status", "loading"}}));
    ++health_loading;
    auto g = ask(port, "POST", "/v1/completions", kCompletion);
    ASSERT_TRUE(g);
    if (g->status == 503) {  // 200 when the load finished in between
      const json e = json::parse(g->body);
      EXPECT_EQ(e["error"]["code"], "model_loading") << g->body;
      EXPECT_TRUE(e["error"]["message"].is_string());
      ++completions_loading;
    }
    // A few rounds of both answers while loading, then let the load finish.
    if (!released && health_loading >= 3 && completions_loading >= 3) {
      ASSERT_TRUE(release_held_load(fifo, [&] { return daemon.running(); })) << daemon.log();
      released = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf("while loading: %d health answers 503, %d completions 503\n", health_loading, completions_loading);
  ASSERT_TRUE(serving) << daemon.log();
  EXPECT_TRUE(released) << "the daemon served before its chat template was read";
  EXPECT_GE(health_loading, 3) << daemon.log();
  EXPECT_GE(completions_loading, 3) << daemon.log();
  EXPECT_EQ(refused_after_listening, 0) << daemon.log();

  ASSERT_TRUE(daemon.wait_ready(30)) << daemon.log();
  auto g = ask(port, "POST", "/v1/completions", kCompletion);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200) << g->body;
  RawHttpClient u;  // the Unix HTTP socket went through the same hand-over
  ASSERT_TRUE(u.connect_unix(dir.path + "/http.sock"));
  ASSERT_TRUE(u.send(http_request("GET", "/health")));
  auto h = u.read_response(10000);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);

  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(30), 0) << daemon.log();
  struct stat st {};
  EXPECT_NE(lstat((dir.path + "/http.sock").c_str(), &st), 0);
}

TEST(HttpLoadingE2e, AFailedLoadStillExits1WithItsMessage) {
  TempDir dir;
  const std::string bad = dir.path + "/bad.gguf";
  std::ofstream(bad) << "this is not a GGUF file";
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.with_model = false;
  config.extra_args = {"--model", bad, "--cpu", "--http", "unix:" + dir.path + "/http.sock"};
  daemon.start(config);
  EXPECT_EQ(daemon.wait_exit(60), 1) << daemon.log();
  EXPECT_NE(daemon.log().find("cannot load model"), std::string::npos) << daemon.log();
  struct stat st {};
  EXPECT_NE(lstat((dir.path + "/http.sock").c_str(), &st), 0);
}

}  // namespace
}  // namespace vks::test
