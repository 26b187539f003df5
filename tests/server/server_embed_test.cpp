// `embed` against the real vkstreamd on stories260K: vectors per input (unit length, identical for
// identical texts, the same from texts and from their token ids), pooling and normalize honoured,
// answered while a generation streams on the same connection (which keeps llama2.c's reference
// tokens), a long text tokenized off the loop and rejected as too long naming its input, bad
// fields rejected, cancel by id.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

double norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return std::sqrt(s);
}

class ServerEmbedTest : public ::testing::Test {
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
  void SetUp() override {
    ASSERT_TRUE(ready_) << daemon_->log();
    ASSERT_TRUE(client_.connect(daemon_->socket_path()));
  }

  // The direct answer to an embed request (or its error).
  std::optional<proto::ServerMessage> embed(proto::EmbedRequest e, int64_t tag = 11) {
    return request(client_, simple(std::move(e), tag), 30000);
  }
  static std::optional<proto::EmbedAnswer> answer(const std::optional<proto::ServerMessage>& m) {
    if (!m) return std::nullopt;
    if (std::holds_alternative<proto::ErrorAnswer>(m->body)) {
      const proto::ErrorAnswer err = std::get<proto::ErrorAnswer>(m->body);
      ADD_FAILURE() << proto::wire_error_name(err.error.code) << ": " << err.error.message;
    }
    if (!std::holds_alternative<proto::EmbedAnswer>(m->body)) return std::nullopt;
    return std::get<proto::EmbedAnswer>(m->body);
  }
  static std::optional<proto::ErrorAnswer> error(const std::optional<proto::ServerMessage>& m) {
    if (!m || !std::holds_alternative<proto::ErrorAnswer>(m->body)) return std::nullopt;
    return std::get<proto::ErrorAnswer>(m->body);
  }

  UdsClient client_;
  static TempDir* dir_;
  static DaemonProcess* daemon_;
  static bool ready_;
};
TempDir* ServerEmbedTest::dir_ = nullptr;
DaemonProcess* ServerEmbedTest::daemon_ = nullptr;
bool ServerEmbedTest::ready_ = false;

TEST_F(ServerEmbedTest, VectorsPerInputFromTextsAndTokens) {
  proto::EmbedRequest e;
  e.input = {"Once upon a time", "The cat sat on the mat.", "Once upon a time"};
  const auto m = embed(e, 21);
  const auto a = answer(m);
  ASSERT_TRUE(a);
  EXPECT_EQ(m->tag, proto::Tag::of(21));
  ASSERT_EQ(a->embeddings.size(), 3u);
  for (const auto& v : a->embeddings) {
    EXPECT_EQ(v.size(), 64u);  // stories260K's dim
    EXPECT_NEAR(norm(v), 1.0, 1e-5);
  }
  EXPECT_EQ(a->embeddings[0], a->embeddings[2]);
  EXPECT_NE(a->embeddings[0], a->embeddings[1]);

  // Token ids of the same texts give the same vectors; usage counts every input's tokens.
  proto::EmbedRequest t;
  int32_t total = 0;
  for (const std::string& text : e.input) {
    const auto ids = request(client_, simple(proto::TokenizeRequest{text, true, false}, 3));
    ASSERT_TRUE(ids && std::holds_alternative<proto::TokenizeAnswer>(ids->body));
    t.tokens.push_back(std::get<proto::TokenizeAnswer>(ids->body).ids);
    total += static_cast<int32_t>(t.tokens.back().size());
  }
  EXPECT_EQ(a->usage.prompt_tokens, total);
  const auto mt = embed(t);
  const auto at = answer(mt);
  ASSERT_TRUE(at);
  EXPECT_EQ(at->embeddings, a->embeddings);
}

TEST_F(ServerEmbedTest, PoolingAndNormalize) {
  proto::EmbedRequest e;
  e.input = {"Lily and Tom went to the park."};
  const auto mean = embed(e);
  e.pooling = "last";
  const auto last = embed(e);
  e.pooling = "cls";
  e.normalize = false;
  const auto cls_raw = embed(e);
  ASSERT_TRUE(answer(mean) && answer(last) && answer(cls_raw));
  EXPECT_NE(answer(mean)->embeddings[0], answer(last)->embeddings[0]);
  EXPECT_GT(std::fabs(norm(answer(cls_raw)->embeddings[0]) - 1.0), 1e-3);
}

TEST_F(ServerEmbedTest, AnsweredWhileAGenerationStreams) {
  proto::EmbedRequest e;
  e.input = {"Once upon a time", "The cat sat on the mat."};
  const auto alone = embed(e);
  ASSERT_TRUE(answer(alone));

  ASSERT_TRUE(client_.send(greedy_request(60, true)));
  // The accepted answer, then the embed request while the stream is running.
  std::optional<proto::ServerMessage> accepted = client_.recv(10000);
  ASSERT_TRUE(accepted && std::holds_alternative<proto::AcceptedAnswer>(accepted->body));
  StreamCollector stream(std::get<proto::AcceptedAnswer>(accepted->body).id);
  ASSERT_TRUE(client_.send(simple(e, 12)));
  std::optional<proto::ServerMessage> batched;
  while (!batched || !stream.complete()) {
    std::optional<proto::ServerMessage> m = client_.recv(30000);
    ASSERT_TRUE(m) << "timed out";
    if (stream.add(*m)) continue;
    ASSERT_FALSE(batched) << "two answers";
    batched = std::move(m);
  }
  ASSERT_TRUE(answer(batched));
  EXPECT_EQ(batched->tag, proto::Tag::of(12));
  EXPECT_EQ(answer(batched)->embeddings, answer(alone)->embeddings);
  EXPECT_EQ(stream.ids(), reference_generated_ids());
}

TEST_F(ServerEmbedTest, TooLongInputIsRejectedNamingIt) {
  std::string text;  // ~40 KB: tokenized off the loop, far beyond stories260K's context
  while (text.size() < 40 * 1024) text += "Once upon a time, there was a little girl named Lily. ";
  proto::EmbedRequest e;
  e.input = {"short", text};
  const auto m = embed(e);
  const auto err = error(m);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->error.code, proto::WireError::kPromptTooLong) << err->error.message;
  EXPECT_EQ(err->error.field, "input.1") << err->error.message;
  // The connection still serves.
  proto::EmbedRequest ok;
  ok.input = {"fine"};
  EXPECT_TRUE(answer(embed(ok)));
}

TEST_F(ServerEmbedTest, BadRequestsAndCancel) {
  proto::EmbedRequest bad_ids;
  bad_ids.tokens = {{1, 100000}};
  const auto m = embed(bad_ids);
  const auto bad = error(m);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->error.code, proto::WireError::kInvalidField);
  EXPECT_EQ(bad->error.field, "tokens.0.1");

  // A raw frame with an unknown pooling name.
  ASSERT_TRUE(client_.send(std::string("\x83\xa4type\xa5" "embed\xa5input\xa1x\xa7pooling\xa3max", 32)));
  const auto p = client_.recv(10000);
  const auto bad_pooling = error(p);
  ASSERT_TRUE(bad_pooling);
  EXPECT_EQ(bad_pooling->error.field, "pooling");

  // Cancel by id: the embed answer is a `cancelled` error, or the vectors if it finished first.
  proto::EmbedRequest many;
  many.id = "emb-cancel";
  for (int k = 0; k < 200; ++k) many.input.push_back("Once upon a time, there was a little girl named Lily.");
  ASSERT_TRUE(client_.send(simple(many, 30)));
  ASSERT_TRUE(client_.send(simple(proto::CancelRequest{"emb-cancel"}, 31)));
  bool got_cancelled = false, got_embed = false;
  for (int k = 0; k < 2; ++k) {
    const auto a = client_.recv(30000);
    ASSERT_TRUE(a);
    const auto err = error(a);
    if (a->tag == proto::Tag::of(31)) {
      got_cancelled = std::holds_alternative<proto::CancelledAnswer>(a->body) ||
                      (err && err->error.code == proto::WireError::kNotFound);
    } else {
      ASSERT_EQ(a->tag, proto::Tag::of(30));
      got_embed = (err && err->error.code == proto::WireError::kCancelled) ||
                  std::holds_alternative<proto::EmbedAnswer>(a->body);
    }
  }
  EXPECT_TRUE(got_cancelled);
  EXPECT_TRUE(got_embed);
}

}  // namespace
}  // namespace vks::test
