// The real daemon under systemd-socket-activate with named descriptors (uds, router, pub): it adopts
// the Unix socket with uv_pipe_open and the ZeroMQ ipc sockets with ZMQ_USE_FD, and serves greedy
// streams on all three. Unknown descriptor names are a startup error.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>
#include <zmq.h>

#include <thread>

#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

bool have_socket_activate() { return access("/usr/bin/systemd-socket-activate", X_OK) == 0; }

TEST(ServerActivationTest, ServesOnAdoptedDescriptors) {
  if (!have_socket_activate()) GTEST_SKIP() << "systemd-socket-activate is not installed (package systemd)";
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.socket_activate = true;
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(40)) << daemon.log();
  EXPECT_NE(daemon.log().find("vkstreamd ready"), std::string::npos);

  // Unix socket.
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon.socket_path()));
  auto hello = request(c, simple(proto::HelloRequest{}, 1));
  ASSERT_TRUE(hello);
  const auto* h = std::get_if<proto::HelloAnswer>(&hello->body);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->pub_endpoint, daemon.pub_endpoint());
  EXPECT_EQ(h->router_endpoint, daemon.router_endpoint());
  auto m = request(c, greedy_request(60));
  ASSERT_TRUE(m);
  const auto* a = std::get_if<proto::AcceptedAnswer>(&m->body);
  ASSERT_NE(a, nullptr);
  StreamCollector s{a->id};

  // The same stream through the adopted XPUB socket (subscribed after submit).
  void* ctx = zmq_ctx_new();
  {
    ZmqSubscriber sub(ctx);
    ASSERT_TRUE(sub.connect(daemon.pub_endpoint()));
    sub.subscribe(a->topic);
    ASSERT_TRUE(collect(c, s, 30000));
    EXPECT_EQ(s.ids(), reference_generated_ids());
    StreamCollector published{a->id};
    ASSERT_TRUE(collect(sub, published, 30000));
    EXPECT_EQ(published.ids(), reference_generated_ids());

    // A generation over the adopted ROUTER socket.
    ZmqClient z(ctx);
    ASSERT_TRUE(z.connect(daemon.router_endpoint()));
    ASSERT_TRUE(z.send(greedy_request(60)));
    auto zm = z.recv(10000);
    ASSERT_TRUE(zm);
    const auto* za = std::get_if<proto::AcceptedAnswer>(&zm->body);
    ASSERT_NE(za, nullptr);
    StreamCollector zs{za->id};
    ASSERT_TRUE(collect(z, zs, 30000));
    EXPECT_EQ(zs.ids(), reference_generated_ids());
  }
  zmq_ctx_term(ctx);

  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

TEST(ServerActivationTest, UnknownDescriptorNameIsAStartupError) {
  if (!have_socket_activate()) GTEST_SKIP() << "systemd-socket-activate is not installed (package systemd)";
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.socket_activate = true;
  config.fdnames = "uds:router:bogus";
  daemon.start(config);
  // systemd-socket-activate starts the daemon on the first connection.
  UdsClient c;
  for (int i = 0; i < 500 && !c.connect(daemon.socket_path()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(daemon.wait_exit(30), 1) << daemon.log();
  EXPECT_NE(daemon.log().find("bogus"), std::string::npos) << daemon.log();
}

}  // namespace
}  // namespace vks::test
