// Limits set on the command line are reported in hello and enforced: requests per connection,
// max_tokens, and the per-connection output bound (a client that stops reading is dropped as a
// slow consumer and its request cancelled).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <regex>
#include <thread>

#include "protocol/protocol.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

// Issue 37: on a busy engine, a cancel in the same write as its generate, or a connection closed
// right after the submit, was answered and then lost (the engine applied cancels that came during a
// step only to admitted requests): 37 of 40 such requests kept running, and orphans filled every
// slot. Every one of them must end cancelled.
TEST(ServerLimitsTest, CancelsRightAfterTheSubmitAreNeverLost) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(40)) << daemon.log();

  // Two long requests keep the engine stepping, so the submits below land during steps.
  UdsClient busy;
  ASSERT_TRUE(busy.connect(daemon.socket_path()));
  for (int i = 0; i < 2; ++i) {
    proto::Request req = greedy_request(1500, true);
    auto& g = std::get<proto::GenerateRequest>(req.body);
    g.id = "busy-" + std::to_string(i);
    g.stream = false;
    auto m = request(busy, req);
    ASSERT_TRUE(m);
    ASSERT_TRUE(std::holds_alternative<proto::AcceptedAnswer>(m->body));
  }
  constexpr int kClients = 20;
  for (int i = 0; i < kClients; ++i) {
    UdsClient c;
    ASSERT_TRUE(c.connect(daemon.socket_path()));
    proto::Request gen = greedy_request(1500, true);
    auto& g = std::get<proto::GenerateRequest>(gen.body);
    g.id = "same-write-" + std::to_string(i);
    g.stream = false;
    gen.tag = proto::Tag::of(1);
    std::string bytes;
    proto::append_frame(bytes, proto::encode_request(gen));
    proto::append_frame(bytes, proto::encode_request(simple(proto::CancelRequest{g.id}, 2)));
    ASSERT_TRUE(c.send_raw(bytes));
    if (i % 2 == 0) {  // half read both answers, half close at once (the close cancels too)
      EXPECT_TRUE(c.recv(10000));
      EXPECT_TRUE(c.recv(10000));
    }
  }
  UdsClient watcher;
  ASSERT_TRUE(watcher.connect(daemon.socket_path()));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; i < kClients; ++i) {
    proto::StatusAnswer status;
    do {
      auto st = request(watcher, simple(proto::StatusRequest{"same-write-" + std::to_string(i)}, 3));
      ASSERT_TRUE(st);
      ASSERT_TRUE(std::holds_alternative<proto::StatusAnswer>(st->body));
      status = std::get<proto::StatusAnswer>(st->body);
      if (status.state != proto::RequestState::kFinished) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (status.state != proto::RequestState::kFinished && std::chrono::steady_clock::now() < until);
    EXPECT_EQ(status.state, proto::RequestState::kFinished) << "request " << i << " still running";
    EXPECT_EQ(status.reason, FinishReason::kCancelled) << "request " << i;
    EXPECT_LT(status.generated_tokens, 1500) << "request " << i;
  }
  busy.close();
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

// Issue 37 (first hour): hello's max_prompt_tokens said the model's context (131,072 for a
// 128K model) where the KV cache held 4,096. It says what the cache can hold.
TEST(ServerLimitsTest, HelloAdvertisesTheKvCacheNotTheContext) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.extra_args = {"--kv-tokens", "256"};  // stories260K's file says a context of 2048
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(40)) << daemon.log();
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon.socket_path()));
  auto hello = request(c, simple(proto::HelloRequest{}, 1));
  ASSERT_TRUE(hello);
  const auto* h = std::get_if<proto::HelloAnswer>(&hello->body);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->limits.max_prompt_tokens, 256);
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

TEST(ServerLimitsTest, ConfiguredLimitsAreReportedAndEnforced) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.extra_args = {"--max-output-bytes", "8192", "--max-requests-per-connection", "2",
                       "--max-frame-bytes", "4096", "--max-queued", "32", "--max-tokens", "2000"};
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(40)) << daemon.log();

  UdsClient c;
  ASSERT_TRUE(c.connect(daemon.socket_path()));
  auto hello = request(c, simple(proto::HelloRequest{}, 1));
  ASSERT_TRUE(hello);
  const auto* h = std::get_if<proto::HelloAnswer>(&hello->body);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->limits.max_output_bytes, 8192u);
  EXPECT_EQ(h->limits.max_requests_per_connection, 2);
  EXPECT_EQ(h->limits.max_frame_bytes, 4096u);
  EXPECT_EQ(h->limits.max_queued, 32);
  EXPECT_EQ(h->limits.max_tokens, 2000);

  // Per-connection request limit.
  for (int i = 0; i < 2; ++i) {
    auto m = request(c, greedy_request(1500, true));
    ASSERT_TRUE(m);
    ASSERT_TRUE(std::holds_alternative<proto::AcceptedAnswer>(m->body));
  }
  auto third = request(c, greedy_request(10));
  ASSERT_TRUE(third);
  const auto* err = std::get_if<proto::ErrorAnswer>(&third->body);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->error.code, proto::WireError::kTooManyRequests);
  auto too_long = request(c, greedy_request(5000));
  ASSERT_TRUE(too_long);
  ASSERT_TRUE(std::holds_alternative<proto::ErrorAnswer>(too_long->body));
  c.close();  // cancels both

  // Issue 14, fault 2: a client that never reads is dropped as a slow consumer at once (no flush it
  // would never take), and its requests are cancelled then, long before their max_tokens.
  UdsClient slow;
  ASSERT_TRUE(slow.connect(daemon.socket_path()));
  constexpr int kSlowRequests = 2;  // --max-requests-per-connection 2
  for (int i = 0; i < kSlowRequests; ++i) {
    proto::Request req = greedy_request(2000, true);
    auto& g = std::get<proto::GenerateRequest>(req.body);
    g.id = "slow-consumer-" + std::to_string(i);  // known without reading the answer
    g.logprobs = 20;                              // big events
    ASSERT_TRUE(slow.send(req));
  }
  UdsClient watcher;
  ASSERT_TRUE(watcher.connect(daemon.socket_path()));
  bool dropped = false;
  for (int i = 0; i < 600 && !dropped; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    dropped = daemon.log().find("slow consumer") != std::string::npos;
  }
  ASSERT_TRUE(dropped) << daemon.log();
  {  // Issue 37: its log line said a queued size under the limit (the crossing frame is not queued).
    std::smatch m;
    const std::string log = daemon.log();
    ASSERT_TRUE(std::regex_search(log, m, std::regex(R"((\d+) bytes of output queued and a frame of (\d+) more, above max_output_bytes (\d+))")))
        << log;
    EXPECT_GT(std::stoull(m[1]) + std::stoull(m[2]), std::stoull(m[3])) << m[0];
  }
  for (int i = 0; i < kSlowRequests; ++i) {
    proto::StatusAnswer status;
    for (int tries = 0; tries < 200; ++tries) {
      auto st = request(watcher, simple(proto::StatusRequest{"slow-consumer-" + std::to_string(i)}, 2));
      ASSERT_TRUE(st);
      ASSERT_TRUE(std::holds_alternative<proto::StatusAnswer>(st->body));
      status = std::get<proto::StatusAnswer>(st->body);
      if (status.state == proto::RequestState::kFinished) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    EXPECT_EQ(status.state, proto::RequestState::kFinished) << "request " << i << " still running";
    EXPECT_EQ(status.reason, FinishReason::kCancelled) << "request " << i;
    EXPECT_LT(status.generated_tokens, 2000);
  }
  // The client was not waited for: it finds what the kernel held, then EOF.
  EXPECT_TRUE(slow.wait_closed(20000));

  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

}  // namespace
}  // namespace vks::test
