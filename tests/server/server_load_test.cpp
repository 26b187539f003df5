// 64 concurrent clients (Unix socket and ZeroMQ) against the real daemon: every stream completes,
// in order, with the reference greedy ids.
#include <gtest/gtest.h>
#include <signal.h>
#include <zmq.h>

#include <atomic>
#include <thread>

#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

TEST(ServerLoadTest, SixtyFourConcurrentClientsGetCorrectStreams) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(40)) << daemon.log();

  constexpr int kClients = 64;
  constexpr int kZmqClients = 16;
  const std::vector<TokenId> reference = reference_generated_ids();
  void* ctx = zmq_ctx_new();
  std::atomic<int> correct{0};
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      StreamCollector s;
      bool ok = false;
      if (i < kZmqClients) {
        ZmqClient c(ctx);
        if (!c.connect(daemon.router_endpoint()) || !c.send(greedy_request(60))) return;
        auto m = c.recv(30000);
        const auto* a = m ? std::get_if<proto::AcceptedAnswer>(&m->body) : nullptr;
        if (a == nullptr) {
          failures[i] = "no accepted answer over ZeroMQ";
          return;
        }
        s.id = a->id;
        ok = collect(c, s, 50000);
      } else {
        UdsClient c;
        if (!c.connect(daemon.socket_path())) {
          failures[i] = "connect failed";
          return;
        }
        auto m = request(c, greedy_request(60), 30000);
        const auto* a = m ? std::get_if<proto::AcceptedAnswer>(&m->body) : nullptr;
        if (a == nullptr) {
          failures[i] = "no accepted answer over the Unix socket";
          return;
        }
        s.id = a->id;
        ok = collect(c, s, 50000);
      }
      if (!ok) {
        failures[i] = "stream incomplete";
      } else if (!s.arrived_in_order || s.ids() != reference) {
        failures[i] = "wrong stream";
      } else {
        ++correct;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  zmq_ctx_term(ctx);
  for (int i = 0; i < kClients; ++i) EXPECT_TRUE(failures[i].empty()) << "client " << i << ": " << failures[i];
  EXPECT_EQ(correct.load(), kClients);

  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

}  // namespace
}  // namespace vks::test
