// Issue 37, against the real vkstreamd over HTTP: chat templates sent with the request cannot
// starve other clients or outlive their client. Sixteen renders of a slow template (each stopped
// by its 2 s bound) filled libuv's 4-thread pool for 8 s, so another client's ordinary chat waited
// that long; renders of a client that had left kept running. Now a client's own template holds at
// most half the pool, and its renders stop when its connection closes; bad templates get a 400
// naming `chat_template` and the bound they crossed, and the daemon keeps serving.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <memory>
#include <vector>

#include "tests/http/http_test_client.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// 20 us a count() of 1 MB, a million times: far past the 2 s a request's renders have.
constexpr const char* kSlowTemplate =
    "{% set s = 'a' * 1000000 %}{% for i in range(1000000) %}{% set n = s.count('b') %}{% endfor %}";
// The list doubled 64 times: bounded by bytes allocated (256 MiB), not element counts.
constexpr const char* kHugeTemplate =
    "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}";
constexpr int kSlowClients = 16;  // 4 waves of 2 s on libuv's 4 threads before the fix

std::string chat_body(const char* chat_template) {
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Once upon a time"}}})},
               {"max_tokens", 8},
               {"temperature", 0}};
  if (chat_template != nullptr) body["chat_template"] = chat_template;
  return http_request("POST", "/v1/chat/completions", body.dump());
}

std::unique_ptr<RawHttpClient> send_chat(const std::string& socket, const char* chat_template) {
  auto c = std::make_unique<RawHttpClient>();
  if (!c->connect_unix(socket) || !c->send(chat_body(chat_template))) return nullptr;
  return c;
}

// A 400 naming chat_template whose message names `bound` (or `or_bound`).
void expect_template_error(const std::optional<RawResponse>& r, const std::string& bound,
                           const std::string& or_bound = "\x01") {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const json e = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(e.contains("error")) << r->body;
  EXPECT_EQ(e["error"]["type"], "invalid_request_error") << r->body;
  EXPECT_EQ(e["error"]["param"], "chat_template") << r->body;
  const std::string message = e["error"]["message"].get<std::string>();
  EXPECT_TRUE(message.find(bound) != std::string::npos || message.find(or_bound) != std::string::npos) << r->body;
}

TEST(ServerTemplateRender, SlowTemplatesNeitherStarveOthersNorOutliveTheirClient) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  const std::string socket = dir.path + "/http.sock";
  config.extra_args = {"--cpu", "--http", "unix:" + socket};
  // libuv's default pool, whatever the environment says: the test is about 4 threads.
  config.env = {"UV_THREADPOOL_SIZE=4"};
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(60)) << daemon.log();

  std::vector<std::unique_ptr<RawHttpClient>> slow;
  for (int i = 0; i < kSlowClients; ++i) {
    slow.push_back(send_chat(socket, kSlowTemplate));
    ASSERT_NE(slow.back(), nullptr);
  }
  // Another client's ordinary chat is answered while those renders still run (liveness: 8 s
  // before, the bound is generous).
  auto ordinary = send_chat(socket, nullptr);
  ASSERT_NE(ordinary, nullptr);
  const auto asked = Clock::now();
  const std::optional<RawResponse> answer = ordinary->read_response(5000);
  ASSERT_TRUE(answer) << "no answer within 5 s while slow templates render\n" << daemon.log();
  EXPECT_EQ(answer->status, 200) << answer->body;
  EXPECT_LT(Clock::now() - asked, std::chrono::seconds(5));

  // The slow clients leave: their renders stop (running) or never start (waiting), so a new one
  // is not queued behind 14 of them (2 s each on 2 threads: 14 s), and gets its clear error.
  slow.clear();
  auto late = send_chat(socket, kSlowTemplate);
  auto huge = send_chat(socket, kHugeTemplate);
  ASSERT_NE(late, nullptr);
  ASSERT_NE(huge, nullptr);
  expect_template_error(late->read_response(5000), "time limit (2000 ms)");
  // 256 MiB of copies take about 0.8 s: on a loaded machine the time bound may come first.
  expect_template_error(huge->read_response(5000), "memory limit", "time limit (2000 ms)");

  // And the daemon keeps serving.
  auto after = send_chat(socket, nullptr);
  ASSERT_NE(after, nullptr);
  const std::optional<RawResponse> again = after->read_response(10000);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;

  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

}  // namespace
}  // namespace vks::test
