// Tokenizing off the socket loop: while one connection's long text (well over 32k tokens) is being
// tokenized, another connection's small request is answered at once; one connection's answers keep
// the order of its requests; a long generate prompt is tokenized off the loop and its rejection
// (too long for stories260K) still names the prompt.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

using Clock = std::chrono::steady_clock;

// ~900 KB of story text (a request frame holds 1 MiB): about 300k tokens of stories260K's
// 512-token vocabulary, some hundreds of milliseconds of tokenizing.
std::string long_text() {
  std::string text;
  while (text.size() < 900 * 1024) {
    text += "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. ";
  }
  return text;
}

class ServerOffLoopTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    daemon_ = new DaemonProcess();
    DaemonConfig config;
    config.dir = dir_->path;
    daemon_->start(config);
    ready_ = daemon_->wait_ready(40);
  }
  static void TearDownTestSuite() {
    delete daemon_;
    delete dir_;
  }
  void SetUp() override { ASSERT_TRUE(ready_) << daemon_->log(); }
  static TempDir* dir_;
  static DaemonProcess* daemon_;
  static bool ready_;
};
TempDir* ServerOffLoopTest::dir_ = nullptr;
DaemonProcess* ServerOffLoopTest::daemon_ = nullptr;
bool ServerOffLoopTest::ready_ = false;

TEST_F(ServerOffLoopTest, ALongTokenizeDoesNotDelayAnotherConnection) {
  UdsClient big;
  UdsClient small;
  ASSERT_TRUE(big.connect(daemon_->socket_path()));
  ASSERT_TRUE(small.connect(daemon_->socket_path()));
  proto::TokenizeRequest t;
  t.text = long_text();
  ASSERT_TRUE(big.send(simple(t, 1)));
  const auto big_sent = Clock::now();
  ASSERT_TRUE(small.send(simple(proto::HelloRequest{}, 2)));
  const std::optional<proto::ServerMessage> hello = small.recv(20000);
  const auto small_latency = Clock::now() - big_sent;
  ASSERT_TRUE(hello);
  EXPECT_TRUE(std::holds_alternative<proto::HelloAnswer>(hello->body));

  const std::optional<proto::ServerMessage> tokens = big.recv(60000);
  const auto big_latency = Clock::now() - big_sent;
  ASSERT_TRUE(tokens);
  const auto* a = std::get_if<proto::TokenizeAnswer>(&tokens->body);
  ASSERT_NE(a, nullptr);
  EXPECT_GT(a->ids.size(), 32768u);
  EXPECT_EQ(a->ids.front(), 1);  // BOS
  // Loosely: had the loop tokenized inline, the hello would have waited for the whole tokenize.
  EXPECT_LT(small_latency * 2, big_latency) << "the small request waited for the long tokenize";
  std::printf("small request answered after %.1f ms, the %zu-token tokenize after %.1f ms\n",
              std::chrono::duration<double, std::milli>(small_latency).count(), a->ids.size(),
              std::chrono::duration<double, std::milli>(big_latency).count());
}

TEST_F(ServerOffLoopTest, OneConnectionsAnswersKeepTheirOrder) {
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  proto::TokenizeRequest t;
  t.text = long_text();
  ASSERT_TRUE(c.send(simple(t, 1)));
  proto::TokenizeRequest small;
  small.text = "Once upon a time";
  ASSERT_TRUE(c.send(simple(small, 2)));
  ASSERT_TRUE(c.send(simple(proto::HelloRequest{}, 3)));
  proto::DetokenizeRequest d;
  d.ids = {1, 403, 407, 261, 378};
  ASSERT_TRUE(c.send(simple(d, 4)));
  for (int64_t expected = 1; expected <= 4; ++expected) {
    const std::optional<proto::ServerMessage> m = c.recv(60000);
    ASSERT_TRUE(m) << "answer " << expected;
    EXPECT_EQ(m->tag, proto::Tag::of(expected));
    if (expected == 2) {
      const auto* a = std::get_if<proto::TokenizeAnswer>(&m->body);
      ASSERT_NE(a, nullptr);
      EXPECT_EQ(a->ids, (std::vector<TokenId>{1, 403, 407, 261, 378}));
    }
    if (expected == 4) {
      const auto* a = std::get_if<proto::DetokenizeAnswer>(&m->body);
      ASSERT_NE(a, nullptr);
      EXPECT_EQ(a->text, "Once upon a time");
    }
  }
}

TEST_F(ServerOffLoopTest, ALongPromptIsTokenizedOffTheLoopAndRejectedByName) {
  UdsClient c;
  UdsClient other;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  ASSERT_TRUE(other.connect(daemon_->socket_path()));
  proto::Request req = greedy_request(10);
  std::get<proto::GenerateRequest>(req.body).prompt = long_text();
  ASSERT_TRUE(c.send(req));
  ASSERT_TRUE(other.send(simple(proto::HelloRequest{}, 2)));
  ASSERT_TRUE(other.recv(20000));
  // Had the loop tokenized the prompt inline, its (small) rejection would already be here.
  std::optional<proto::ServerMessage> m = c.recv(0);
  EXPECT_FALSE(m) << "the long prompt was answered before another connection's hello: the loop was blocked";
  if (!m) m = c.recv(60000);
  ASSERT_TRUE(m);
  const auto* err = std::get_if<proto::ErrorAnswer>(&m->body);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->error.code, proto::WireError::kPromptTooLong);
  EXPECT_EQ(err->error.field, "prompt");
  // The connection is still served normally afterwards.
  const std::optional<proto::ServerMessage> accepted = request(c, greedy_request(4), 20000);
  ASSERT_TRUE(accepted);
  EXPECT_TRUE(std::holds_alternative<proto::AcceptedAnswer>(accepted->body));
}

TEST_F(ServerOffLoopTest, LongDetokenizeIsAnsweredInOrder) {
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  proto::DetokenizeRequest d;
  for (int i = 0; i < 5000; ++i) d.ids.insert(d.ids.end(), {403, 407, 261, 378});
  ASSERT_TRUE(c.send(simple(d, 1)));
  ASSERT_TRUE(c.send(simple(proto::HelloRequest{}, 2)));
  const std::optional<proto::ServerMessage> first = c.recv(30000);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->tag, proto::Tag::of(1));
  const auto* a = std::get_if<proto::DetokenizeAnswer>(&first->body);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->text.rfind("Once upon a time", 0), 0u);
  const std::optional<proto::ServerMessage> second = c.recv(30000);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->tag, proto::Tag::of(2));
}

}  // namespace
}  // namespace vks::test
