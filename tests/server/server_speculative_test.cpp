// End to end, real daemon on stories260K.gguf with --speculative ngram (--draft-always, so that
// drafts are verified whatever the machine's step costs): a greedy msgpack generate with
// `speculative: true` streams the ids of the same request with `speculative: false`, and its
// finished.timings and the daemon's stats report the drafted and accepted tokens.
#include <gtest/gtest.h>
#include <signal.h>

#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

struct Result {
  std::vector<TokenId> ids;
  proto::Timings timings;
  std::optional<FinishReason> reason;
};

Result generate(UdsClient& c, std::optional<int32_t> speculative) {
  proto::GenerateRequest g;
  g.prompt = "Tom had a red ball. Tom had a red ball. Tom had a red ball. Tom had";
  g.add_bos = true;
  g.temperature = 0.0;
  g.max_tokens = 48;
  g.speculative = speculative;
  Result out;
  auto m = request(c, simple(std::move(g), 5));
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
  out.reason = s.reason();
  if (!s.by_seq.empty() && s.by_seq.back()) out.timings = s.by_seq.back()->timings;
  return out;
}

TEST(ServerSpeculative, SameTokensWithDraftCountsInTimingsAndStats) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.extra_args = {"--speculative", "ngram", "--draft-tokens", "4", "--draft-always"};
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(40)) << daemon.log();
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon.socket_path()));

  const Result plain = generate(c, 0);            // speculative: false
  const Result spec = generate(c, -1);            // speculative: true (the daemon's 4)
  const Result by_default = generate(c, std::nullopt);  // unset: the daemon's --speculative
  ASSERT_FALSE(plain.ids.empty());
  EXPECT_EQ(spec.ids, plain.ids);
  EXPECT_EQ(by_default.ids, plain.ids);
  EXPECT_EQ(spec.reason, plain.reason);
  EXPECT_EQ(plain.timings.draft_tokens, 0);
  EXPECT_GT(spec.timings.draft_tokens, 0);
  EXPECT_GT(spec.timings.accepted_tokens, 0);
  EXPECT_LE(spec.timings.accepted_tokens, spec.timings.draft_tokens);
  EXPECT_GT(by_default.timings.draft_tokens, 0);

  auto m = request(c, simple(proto::StatsRequest{}, 9));
  ASSERT_TRUE(m);
  const auto* st = std::get_if<proto::StatsAnswer>(&m->body);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->stats.draft_tokens, int64_t{spec.timings.draft_tokens} + by_default.timings.draft_tokens);
  EXPECT_EQ(st->stats.accepted_tokens, int64_t{spec.timings.accepted_tokens} + by_default.timings.accepted_tokens);
  EXPECT_DOUBLE_EQ(st->stats.draft_acceptance_rate,
                   static_cast<double>(st->stats.accepted_tokens) / static_cast<double>(st->stats.draft_tokens));

  c.close();
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

}  // namespace
}  // namespace vks::test
