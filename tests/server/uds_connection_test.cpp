// UdsServer and Connection on a real libuv loop, no daemon: frames before a framing error are
// answered before the error closes the connection, and output is bounded.
#include <gtest/gtest.h>
#include <uv.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "protocol/protocol.h"
#include "server/uds_server.h"
#include "tests/server/daemon_harness.h"

namespace vks::server {
namespace {

std::string header(uint32_t n) {
  uint8_t h[proto::kFrameHeaderBytes];
  proto::write_frame_header(h, n);
  return std::string(reinterpret_cast<const char*>(h), proto::kFrameHeaderBytes);
}

std::string framed(std::string_view payload) {
  std::string out;
  proto::append_frame(out, payload);
  return out;
}

// A UdsServer serving on its own thread; `hooks` run there. stop() closes everything and joins.
class LoopServer {
 public:
  // `setup` runs before the loop thread starts, `teardown` on the loop thread at stop().
  LoopServer(const proto::ProtocolLimits& limits, UdsServer::Hooks hooks,
             std::function<void(uv_loop_t*, UdsServer&)> setup = {}, std::function<void()> teardown = {})
      : teardown_(std::move(teardown)) {
    uv_loop_init(&loop_);
    uv_async_init(&loop_, &stop_async_, &LoopServer::on_stop);
    stop_async_.data = this;
    server_ = std::make_unique<UdsServer>(&loop_, limits, PeerPolicy{}, std::move(hooks));
    server_->bind(dir_.path + "/s.sock", 0600);
    if (setup) setup(&loop_, *server_);
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }
  ~LoopServer() { stop(); }

  std::string path() const { return dir_.path + "/s.sock"; }

  void stop() {
    if (!thread_.joinable()) return;
    uv_async_send(&stop_async_);
    thread_.join();
    server_.reset();
    uv_loop_close(&loop_);
  }

 private:
  static void on_stop(uv_async_t* async) {
    auto* self = static_cast<LoopServer*>(async->data);
    self->server_->stop_accepting();
    self->server_->close_all(/*flush=*/false);
    if (self->teardown_) self->teardown_();
    uv_close(reinterpret_cast<uv_handle_t*>(async), nullptr);
  }

  test::TempDir dir_;
  std::function<void()> teardown_;
  uv_loop_t loop_{};
  uv_async_t stop_async_{};
  std::unique_ptr<UdsServer> server_;
  std::thread thread_;
};

proto::ProtocolLimits small_limits() {
  proto::ProtocolLimits limits;
  limits.max_frame_bytes = 4096;
  limits.max_output_bytes = 1 << 20;
  return limits;
}

// The client sends N frames and a bad header in one write; it must get N echoes, then the error
// (code `expected`), then EOF.
void expect_frames_answered_before_error(LoopServer& server, const std::string& bad_header, int n,
                                         proto::WireError expected) {
  test::UdsClient client;
  ASSERT_TRUE(client.connect(server.path()));
  std::string bytes;
  for (int i = 0; i < n; ++i) bytes += framed("frame " + std::to_string(i));
  bytes += bad_header;
  ASSERT_TRUE(client.send_raw(bytes));
  for (int i = 0; i < n; ++i) {
    std::optional<std::string> echo = client.recv_frame(5000);
    ASSERT_TRUE(echo) << "frame " << i << " of " << n << " was not answered";
    EXPECT_EQ(*echo, "echo frame " + std::to_string(i));
  }
  std::optional<std::string> last = client.recv_frame(5000);
  ASSERT_TRUE(last);
  proto::Result<proto::ServerMessage> error = proto::parse_server_message(*last);
  ASSERT_TRUE(error);
  const auto* e = std::get_if<proto::ErrorAnswer>(&error->body);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->error.code, expected);
  EXPECT_TRUE(client.wait_closed(5000));
}

UdsServer::Hooks echo_hooks() {
  UdsServer::Hooks hooks;
  hooks.on_open = [](Connection&) {};
  hooks.on_frame = [](Connection& c, std::string& payload) { c.send("echo " + payload); };
  hooks.on_closed = [](Connection&) {};
  return hooks;
}

// Issue 37: past the open-file limit, msgpack clients got EPIPE. The daemon caps Unix-socket
// connections below what its descriptors allow; past the cap a client is answered `overloaded`.
TEST(UdsConnection, ConnectionsPastTheCapAreAnsweredOverloaded) {
  LoopServer server(small_limits(), echo_hooks(), [](uv_loop_t*, UdsServer& uds) { uds.set_max_connections(2); });
  std::vector<test::UdsClient> held(2);
  for (auto& c : held) {
    ASSERT_TRUE(c.connect(server.path()));
    ASSERT_TRUE(c.send_raw(framed("hi")));
    ASSERT_EQ(c.recv_frame(5000), std::optional<std::string>("echo hi"));
  }
  test::UdsClient extra;
  ASSERT_TRUE(extra.connect(server.path()));
  std::optional<std::string> answer = extra.recv_frame(5000);
  ASSERT_TRUE(answer);
  proto::Result<proto::ServerMessage> error = proto::parse_server_message(*answer);
  ASSERT_TRUE(error);
  const auto* e = std::get_if<proto::ErrorAnswer>(&error->body);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->error.code, proto::WireError::kOverloaded);
  EXPECT_TRUE(extra.wait_closed(5000));
  held.clear();  // room again
  bool served = false;
  for (int attempt = 0; attempt < 100 && !served; ++attempt) {
    test::UdsClient c;
    ASSERT_TRUE(c.connect(server.path()));
    ASSERT_TRUE(c.send_raw(framed("again")));
    served = c.recv_frame(5000) == std::optional<std::string>("echo again");
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served);
}

TEST(UdsConnection, FramesBeforeAZeroLengthHeaderAreAnsweredFirst) {
  LoopServer server(small_limits(), echo_hooks());
  expect_frames_answered_before_error(server, header(0), 50, proto::WireError::kBadFrame);
}

TEST(UdsConnection, FramesBeforeAnOversizedHeaderAreAnsweredFirst) {
  LoopServer server(small_limits(), echo_hooks());
  expect_frames_answered_before_error(server, header(1u << 30), 50, proto::WireError::kFrameTooLarge);
}

// The daemon's case: the answers of earlier frames are still being prepared when the bad header
// is seen; the error waits for them (here: a timer stands in for the off-loop work).
TEST(UdsConnection, FramingErrorWaitsForAnswersStillInPreparation) {
  struct Pending {
    std::vector<std::string> answers;
    uint64_t conn_id = 0;
    std::optional<proto::ProtocolError> error;
    UdsServer* server = nullptr;
  } pending;
  uv_timer_t timer{};
  UdsServer::Hooks hooks = echo_hooks();
  hooks.on_frame = [&](Connection& c, std::string& payload) {
    pending.conn_id = c.id();
    pending.answers.push_back("echo " + payload);
    uv_timer_start(&timer, [](uv_timer_t* t) {
      auto* p = static_cast<Pending*>(t->data);
      Connection* conn = p->server->find(p->conn_id);
      if (conn == nullptr) return;
      for (const std::string& a : p->answers) conn->send(a);
      p->answers.clear();
      if (p->error) conn->fail(*p->error);
    }, 50, 0);
  };
  hooks.on_framing_error = [&](Connection&, const proto::ProtocolError& error) { pending.error = error; };
  LoopServer server(
      small_limits(), std::move(hooks),
      [&](uv_loop_t* loop, UdsServer& uds) {
        uv_timer_init(loop, &timer);
        timer.data = &pending;
        pending.server = &uds;
      },
      [&] { uv_close(reinterpret_cast<uv_handle_t*>(&timer), nullptr); });
  expect_frames_answered_before_error(server, header(0), 20, proto::WireError::kBadFrame);
  server.stop();
}

// Issue 14, fault 2: a client that never reads is closed as soon as its queued output passes
// max_output_bytes (no flush it would never take), so the owner's close hook (which cancels its
// requests) runs at once; the queued output never exceeds the bound.
TEST(UdsConnection, SlowConsumerIsClosedAtOnceWithoutReading) {
  struct Flood {
    UdsServer* server = nullptr;
    uint64_t conn_id = 0;
    uint64_t max_queued = 0;
    int refused = 0;
    std::atomic<bool> closed{false};
  } flood;
  uv_timer_t timer{};
  proto::ProtocolLimits limits = small_limits();
  limits.max_output_bytes = 64 * 1024;
  UdsServer::Hooks hooks = echo_hooks();
  hooks.on_frame = [&](Connection& c, std::string&) {
    flood.conn_id = c.id();
    uv_timer_start(&timer, [](uv_timer_t* t) {
      auto* f = static_cast<Flood*>(t->data);
      Connection* conn = f->server->find(f->conn_id);
      for (int i = 0; conn != nullptr && i < 8; ++i) {
        if (!conn->send(std::string(2000, 'x'))) {
          ++f->refused;
          break;
        }
        f->max_queued = std::max(f->max_queued, conn->queued_bytes());
      }
      if (conn == nullptr || conn->closing()) uv_timer_stop(t);
    }, 1, 1);
  };
  hooks.on_closed = [&](Connection&) { flood.closed = true; };
  LoopServer server(
      limits, std::move(hooks),
      [&](uv_loop_t* loop, UdsServer& uds) {
        uv_timer_init(loop, &timer);
        timer.data = &flood;
        flood.server = &uds;
      },
      [&] { uv_close(reinterpret_cast<uv_handle_t*>(&timer), nullptr); });
  test::UdsClient client;
  ASSERT_TRUE(client.connect(server.path()));
  ASSERT_TRUE(client.send("start"));
  // The client reads nothing meanwhile.
  for (int i = 0; i < 500 && !flood.closed; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(flood.closed) << "the slow consumer was not closed while it did not read";
  server.stop();
  EXPECT_EQ(flood.refused, 1);
  EXPECT_LE(flood.max_queued, limits.max_output_bytes);
  EXPECT_TRUE(client.wait_closed(5000));  // what the kernel held, then EOF
}

}  // namespace
}  // namespace vks::server
