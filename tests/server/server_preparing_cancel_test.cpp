// Issue 37: a `cancel` naming a generation still prepared off the loop (its chat template
// rendering) was lost: the id was not registered until the render finished, so the cancel was
// answered not_found and the request then ran (or rendered for its whole 2 s bound). Now the cancel
// is acknowledged, stops the render (its RenderScope flag) and the request ends with an error
// `cancelled`; on every transport the request came in by and whatever transport the cancel used.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <zmq.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "tests/http/http_test_client.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// 20 us a count() of 1 MB, a million times: runs until the request's 2 s render bound stops it.
constexpr const char* kSlowTemplate =
    "{% set s = 'a' * 1000000 %}{% for i in range(1000000) %}{% set n = s.count('b') %}{% endfor %}";

proto::Request slow_chat(const std::string& id) {
  proto::ChatRequest chat;
  chat.generate.id = id;
  chat.generate.max_tokens = 8;
  chat.messages = {{"user", "Once upon a time"}};
  chat.chat_template = kSlowTemplate;
  return simple(std::move(chat), 7);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class PreparingCancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.dir = dir_.path;
    http_socket_ = dir_.path + "/http.sock";
    config_.extra_args = {"--cpu", "--http", "unix:" + http_socket_};
    daemon_.start(config_);
    ASSERT_TRUE(daemon_.wait_ready(60)) << daemon_.log();
    zmq_ = zmq_ctx_new();
  }
  void TearDown() override {
    if (zmq_ != nullptr) zmq_ctx_term(zmq_);
    daemon_.signal(SIGTERM);
    EXPECT_EQ(daemon_.wait_exit(20), 0) << daemon_.log();
  }

  // The answer to a cancel of `id` sent on a fresh Unix-socket connection.
  std::optional<proto::ServerMessage> cancel_over_uds(const std::string& id) {
    UdsClient c;
    if (!c.connect(daemon_.socket_path()) || !c.send(simple(proto::CancelRequest{id}, 9))) return std::nullopt;
    return c.recv(5000);
  }

  // The answer to the same over a ZeroMQ DEALER.
  std::optional<proto::ServerMessage> cancel_over_zmq(const std::string& id) {
    ZmqClient c(zmq_);
    if (!c.connect(daemon_.router_endpoint()) || !c.send(simple(proto::CancelRequest{id}, 9))) return std::nullopt;
    return c.recv(5000);
  }

  // The chat's own answer: an error `cancelled` naming its id, well before its render's 2 s bound.
  static void expect_cancelled(const std::optional<proto::ServerMessage>& m, const std::string& id,
                               Clock::time_point cancelled_at) {
    ASSERT_TRUE(m) << "no answer to the cancelled chat";
    const auto* e = std::get_if<proto::ErrorAnswer>(&m->body);
    ASSERT_NE(e, nullptr) << "the cancelled chat was answered with something else than an error";
    EXPECT_EQ(e->error.code, proto::WireError::kCancelled) << e->error.message;
    EXPECT_EQ(e->id, id);
    EXPECT_LT(seconds_since(cancelled_at), 1.8) << "the render was not stopped by the cancel";
  }

  static void expect_acknowledged(const std::optional<proto::ServerMessage>& m, const std::string& id) {
    ASSERT_TRUE(m) << "no answer to the cancel";
    const auto* ack = std::get_if<proto::CancelledAnswer>(&m->body);
    const auto* e = std::get_if<proto::ErrorAnswer>(&m->body);
    ASSERT_NE(ack, nullptr) << "cancel answered with an error: " << (e != nullptr ? e->error.message : "?");
    EXPECT_EQ(ack->id, id);
  }

  TempDir dir_;
  DaemonConfig config_;
  DaemonProcess daemon_;
  std::string http_socket_;
  void* zmq_ = nullptr;
};

TEST_F(PreparingCancelTest, UdsChatCancelledFromAnotherConnectionWhileItRenders) {
  UdsClient owner;
  ASSERT_TRUE(owner.connect(daemon_.socket_path()));
  ASSERT_TRUE(owner.send(slow_chat("render-uds")));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the render is under way
  const auto cancelled_at = Clock::now();
  expect_acknowledged(cancel_over_uds("render-uds"), "render-uds");
  expect_cancelled(owner.recv(5000), "render-uds", cancelled_at);
  // The id is free again, and the daemon serves the same client.
  ASSERT_TRUE(owner.send(simple(proto::HelloRequest{}, 2)));
  const auto hello = owner.recv(5000);
  ASSERT_TRUE(hello);
  EXPECT_TRUE(std::holds_alternative<proto::HelloAnswer>(hello->body));
}

TEST_F(PreparingCancelTest, ZmqChatCancelledOverZmqWhileItRenders) {
  ZmqClient owner(zmq_);
  ASSERT_TRUE(owner.connect(daemon_.router_endpoint()));
  ASSERT_TRUE(owner.send(slow_chat("render-zmq")));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto cancelled_at = Clock::now();
  expect_acknowledged(cancel_over_zmq("render-zmq"), "render-zmq");
  expect_cancelled(owner.recv(5000), "render-zmq", cancelled_at);
}

// Answers are kept in order per connection, and a cancel sent after a chat on the same connection
// used to wait behind that chat's render: the render ran to its 2 s bound (the chat answered with
// the time limit), then the cancel found nothing. Now it stops the render when it arrives; its own
// answer still comes second. (The quadratic list build is no slow render any more: it hits
// the 256 MiB allocation bound in about 0.2 s, so the slow scan stands in for it.)
TEST_F(PreparingCancelTest, ChatCancelledOnItsOwnConnectionWhileItRenders) {
  UdsClient uds;
  ASSERT_TRUE(uds.connect(daemon_.socket_path()));
  ASSERT_TRUE(uds.send(slow_chat("own-uds")));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the render is under way
  auto cancelled_at = Clock::now();
  ASSERT_TRUE(uds.send(simple(proto::CancelRequest{"own-uds"}, 9)));
  expect_cancelled(uds.recv(5000), "own-uds", cancelled_at);
  expect_acknowledged(uds.recv(5000), "own-uds");
  EXPECT_LT(seconds_since(cancelled_at), 1.0) << "the render went on after the cancel (1.7 s of it were left)";

  ZmqClient zmq(zmq_);
  ASSERT_TRUE(zmq.connect(daemon_.router_endpoint()));
  ASSERT_TRUE(zmq.send(slow_chat("own-zmq")));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  cancelled_at = Clock::now();
  ASSERT_TRUE(zmq.send(simple(proto::CancelRequest{"own-zmq"}, 9)));
  expect_cancelled(zmq.recv(5000), "own-zmq", cancelled_at);
  expect_acknowledged(zmq.recv(5000), "own-zmq");
  EXPECT_LT(seconds_since(cancelled_at), 1.0) << "the render went on after the cancel (1.7 s of it were left)";
}

TEST_F(PreparingCancelTest, HttpChatCancelledByIdWhileItRenders) {
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Once upon a time"}}})},
               {"max_tokens", 8},
               {"chat_template", kSlowTemplate}};
  RawHttpClient owner;
  ASSERT_TRUE(owner.connect_unix(http_socket_));
  ASSERT_TRUE(owner.send(http_request("POST", "/v1/chat/completions", body.dump(), "x-request-id: render-http\r\n")));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto cancelled_at = Clock::now();
  expect_acknowledged(cancel_over_uds("render-http"), "render-http");
  const std::optional<RawResponse> r = owner.read_response(5000);
  ASSERT_TRUE(r) << daemon_.log();
  const json e = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(e.contains("error")) << r->body;
  EXPECT_EQ(e["error"]["code"], "cancelled") << r->body;
  EXPECT_LT(seconds_since(cancelled_at), 1.8) << r->body;
}

}  // namespace
}  // namespace vks::test
