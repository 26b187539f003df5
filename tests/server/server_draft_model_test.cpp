// End to end, real daemon on stories260K.gguf with --draft-model: stories260K drafting for itself
// (--draft-always, so that drafts are verified whatever the machine's step costs) streams the ids
// of plain decoding, greedy and seeded sampled, with every greedy draft accepted; a draft model
// of another vocabulary (aidreams260K: 512 tokens too, other texts) stops the daemon at startup
// with a message naming both files.
#include <gtest/gtest.h>
#include <signal.h>

#include "tests/common/test_models.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

struct Result {
  std::vector<TokenId> ids;
  proto::Timings timings;
};

Result generate(UdsClient& c, std::optional<int32_t> speculative, double temperature, uint64_t id) {
  proto::GenerateRequest g;
  g.prompt = "Once upon a time";
  g.add_bos = true;
  g.temperature = temperature;
  g.seed = 11;
  g.max_tokens = 40;
  g.speculative = speculative;
  Result out;
  auto m = request(c, simple(std::move(g), id));
  const auto* a = m ? std::get_if<proto::AcceptedAnswer>(&m->body) : nullptr;
  if (a == nullptr) {
    ADD_FAILURE() << "generate was not accepted";
    return out;
  }
  StreamCollector s{a->id};
  if (!collect(c, s, 30000)) {
    ADD_FAILURE() << "stream did not finish";
    return out;
  }
  out.ids = s.ids();
  if (!s.by_seq.empty() && s.by_seq.back()) out.timings = s.by_seq.back()->timings;
  return out;
}

TEST(ServerDraftModel, SameTokensAsPlainDecoding) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.extra_args = {"--draft-model", stories_model(), "--draft-tokens", "4", "--draft-always"};
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(40)) << daemon.log();
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon.socket_path()));
  const Result plain = generate(c, 0, 0.0, 5);
  const Result spec = generate(c, std::nullopt, 0.0, 6);  // unset: the daemon's draft model
  ASSERT_FALSE(plain.ids.empty());
  EXPECT_EQ(spec.ids, plain.ids);
  EXPECT_EQ(plain.timings.draft_tokens, 0);
  EXPECT_GT(spec.timings.draft_tokens, 0);
  EXPECT_EQ(spec.timings.accepted_tokens, spec.timings.draft_tokens) << "the model drafting for itself was rejected";
  const Result sampled_plain = generate(c, 0, 0.9, 7);
  const Result sampled = generate(c, -1, 0.9, 8);
  EXPECT_EQ(sampled.ids, sampled_plain.ids);
  EXPECT_GT(sampled.timings.draft_tokens, 0);
  c.close();
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

TEST(ServerDraftModel, AnotherVocabularyIsRefusedAtStartup) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  const std::string other = model_path("aidreams260K.gguf");
  config.extra_args = {"--draft-model", other};
  daemon.start(config);
  EXPECT_NE(daemon.wait_exit(40), 0) << daemon.log();
  const std::string log = daemon.log();
  EXPECT_NE(log.find("--draft-model " + other + " cannot draft for --model " + stories_model()), std::string::npos) << log;
  EXPECT_NE(log.find("same vocabulary"), std::string::npos) << log;
}

// A draft slot rolls back by keeping a KV prefix: a model with recurrent layers cannot draft.
TEST(ServerDraftModel, ARecurrentDraftModelIsRefusedAtStartup) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.with_model = false;
  const std::string hybrid = model_path("qwen35-tiny.gguf");
  config.extra_args = {"--model", hybrid, "--draft-model", hybrid, "--cpu"};
  daemon.start(config);
  EXPECT_NE(daemon.wait_exit(40), 0) << daemon.log();
  EXPECT_NE(daemon.log().find("has recurrent layers"), std::string::npos) << daemon.log();
}

}  // namespace
}  // namespace vks::test
