#include "engine/sched/stop_checker.h"

#include <gtest/gtest.h>

#include "tests/sched/fakes.h"

namespace vks::sched {
namespace {

// ids: 3 "Hel", 4 "lo", 5 " wor", 6 "ld", 7 "!", 8 first two bytes of "€", 9 its last byte, 10 "x"
test::FakeTokenizer tok({"Hel", "lo", " wor", "ld", "!", "\xE2\x82", "\xAC", "x"});
const std::vector<int32_t> kPrompt = {1, 10};

struct Fed {
  std::vector<std::string> deltas;
  std::string text;
  std::optional<FinishReason> finish;
  int32_t n = 0;
};

Fed feed(StopChecker& sc, const std::vector<int32_t>& ids) {
  Fed r;
  for (int32_t id : ids) {
    StopOutcome o = sc.on_token(id, ++r.n);
    r.deltas.push_back(o.text);
    r.text += o.text;
    if (o.finish) {
      r.finish = o.finish;
      break;
    }
  }
  return r;
}

StopParams stops(std::vector<std::string> s, int32_t max_tokens = 100) {
  StopParams p;
  p.stop_strings = std::move(s);
  p.max_tokens = max_tokens;
  return p;
}

TEST(StopChecker, StopStringAcrossTokensIsNotEmitted) {
  StopChecker sc(stops({"world"}), tok, kPrompt);
  Fed r = feed(sc, {3, 4, 5, 6, 7});
  EXPECT_EQ(r.text, "Hello ");
  ASSERT_TRUE(r.finish);
  EXPECT_EQ(*r.finish, FinishReason::kStop);
  EXPECT_EQ(r.n, 4);  // stopped at the token completing the stop string
  EXPECT_EQ(r.deltas, (std::vector<std::string>{"Hel", "lo", " ", ""}));
}

TEST(StopChecker, HoldsBackOnlyWhilePartialMatchIsPossible) {
  StopChecker sc(stops({"lox"}), tok, kPrompt);
  Fed r = feed(sc, {3, 4, 5, 7});
  EXPECT_FALSE(r.finish);
  EXPECT_EQ(r.deltas, (std::vector<std::string>{"He", "l", "lo wor", "!"}));
  EXPECT_EQ(sc.drain(), "");
}

TEST(StopChecker, StopStringInsideOneTokenCutsThere) {
  StopChecker sc(stops({"ell"}), tok, kPrompt);
  Fed r = feed(sc, {3, 4});
  EXPECT_EQ(r.text, "H");
  EXPECT_EQ(*r.finish, FinishReason::kStop);
}

TEST(StopChecker, EarliestOfSeveralStopStringsWins) {
  StopChecker sc(stops({"ld!", "o w"}), tok, kPrompt);
  Fed r = feed(sc, {3, 4, 5, 6, 7});
  EXPECT_EQ(r.text, "Hell");
  EXPECT_EQ(*r.finish, FinishReason::kStop);
}

TEST(StopChecker, NeverEmitsHalfAUtf8Character) {
  StopChecker sc(stops({}), tok, kPrompt);
  Fed r = feed(sc, {3, 8, 9, 7});
  EXPECT_EQ(r.deltas, (std::vector<std::string>{"Hel", "", "\xE2\x82\xAC", "!"}));
}

TEST(StopChecker, MultiByteStopStringSplitAcrossByteTokens) {
  StopChecker sc(stops({"\xE2\x82\xAC!"}), tok, kPrompt);
  Fed r = feed(sc, {3, 8, 9, 7, 4});
  EXPECT_EQ(r.text, "Hel");
  EXPECT_EQ(*r.finish, FinishReason::kStop);
}

TEST(StopChecker, EosStopsAndFlushesHeldText) {
  StopChecker sc(stops({"lox"}), tok, kPrompt);
  Fed r = feed(sc, {3, 4, 2, 7});
  EXPECT_EQ(r.text, "Hello");  // "lo" was held for "lox", released at EOS
  EXPECT_EQ(*r.finish, FinishReason::kStop);
  EXPECT_EQ(r.n, 3);
}

TEST(StopChecker, IgnoreEosKeepsGoing) {
  StopParams p = stops({});
  p.ignore_eos = true;
  StopChecker sc(p, tok, kPrompt);
  Fed r = feed(sc, {3, 2, 4});
  EXPECT_FALSE(r.finish);
  EXPECT_EQ(r.text, "Hello");
}

TEST(StopChecker, StopTokenIdsStopWithoutTheirText) {
  StopParams p = stops({});
  p.stop_token_ids = {7};
  StopChecker sc(p, tok, kPrompt);
  Fed r = feed(sc, {3, 4, 7, 3});
  EXPECT_EQ(r.text, "Hello");
  EXPECT_EQ(*r.finish, FinishReason::kStop);
}

TEST(StopChecker, MinTokensSuppressesStops) {
  StopParams p = stops({"lo"});
  p.min_tokens = 3;
  p.stop_token_ids = {7};
  StopChecker sc(p, tok, kPrompt);
  const std::vector<int32_t> eog = {2};
  EXPECT_EQ(sc.suppressed_for(1, eog), (std::vector<int32_t>{2, 7}));
  EXPECT_EQ(sc.suppressed_for(3, eog), (std::vector<int32_t>{2, 7}));
  EXPECT_TRUE(sc.suppressed_for(4, eog).empty());
  Fed r = feed(sc, {3, 2, 4, 7});  // EOS at 2 and "lo" at 3 are ignored; id 7 at n=4 stops
  EXPECT_EQ(*r.finish, FinishReason::kStop);
  EXPECT_EQ(r.n, 4);
  EXPECT_EQ(r.text, "Hello");
}

TEST(StopChecker, MaxTokensEndsWithLengthAndFlushes) {
  StopChecker sc(stops({"lox"}, 2), tok, kPrompt);
  Fed r = feed(sc, {3, 4, 5});
  EXPECT_EQ(*r.finish, FinishReason::kLength);
  EXPECT_EQ(r.text, "Hello");
  EXPECT_EQ(r.n, 2);
}

TEST(StopChecker, StopStringOnTheLastAllowedTokenIsStop) {
  StopChecker sc(stops({"llo"}, 2), tok, kPrompt);
  Fed r = feed(sc, {3, 4});
  EXPECT_EQ(*r.finish, FinishReason::kStop);
  EXPECT_EQ(r.text, "He");
}

TEST(StopChecker, DrainReleasesHeldText) {
  StopChecker sc(stops({"world"}), tok, kPrompt);
  Fed r = feed(sc, {3, 5});
  EXPECT_EQ(r.text, "Hel ");
  EXPECT_EQ(sc.drain(), "wor");
}

}  // namespace
}  // namespace vks::sched
