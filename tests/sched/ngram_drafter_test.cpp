// Prompt lookup (ngram_drafter.h) against a plain reference: the latest earlier occurrence of the
// longest matching suffix, its continuation, repeated past the sequence's end.
#include "engine/sched/ngram_drafter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace vks::sched {
namespace {

std::vector<int32_t> draft_of(const std::vector<int32_t>& tokens, int32_t max_draft) {
  std::vector<int32_t> draft{99, 99};  // cleared by the drafter
  ngram_draft(tokens, max_draft, draft);
  return draft;
}

// The same rule written the slow way: the text after the match is extended by the text it copies.
std::vector<int32_t> reference_draft(const std::vector<int32_t>& tokens, int32_t max_draft) {
  const auto size = static_cast<int64_t>(tokens.size());
  for (int64_t n = kNgramMax; n >= kNgramMin; --n) {
    if (size <= n) continue;
    for (int64_t i = size - n - 1; i >= 0; --i) {
      if (!std::equal(tokens.end() - n, tokens.end(), tokens.begin() + i)) continue;
      std::vector<int32_t> text = tokens;
      for (int64_t j = 0; j < max_draft; ++j) text.push_back(text[static_cast<size_t>(i + n + j)]);
      return {text.begin() + size, text.end()};
    }
  }
  return {};
}

TEST(NgramDraft, ContinuesTheLatestOccurrenceOfTheLongestSuffix) {
  // "7 8 9" occurs twice; the latest one is followed by 4 5 6.
  const std::vector<int32_t> t{7, 8, 9, 1, 2, 3, 7, 8, 9, 4, 5, 6, 0, 7, 8, 9};
  EXPECT_EQ(draft_of(t, 3), (std::vector<int32_t>{4, 5, 6}));
  // Only "9" matches for a suffix "x 9" seen nowhere else as a pair.
  const std::vector<int32_t> u{9, 2, 3, 5, 9};
  EXPECT_EQ(draft_of(u, 2), (std::vector<int32_t>{2, 3}));
  EXPECT_TRUE(draft_of({1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(draft_of({5}, 4).empty());
  EXPECT_TRUE(draft_of(t, 0).empty());
}

TEST(NgramDraft, ACycleShorterThanTheDraftRepeats) {
  // Greedy decoding caught in a cycle of period 2, then of period 1: the occurrence found lies 2 (1)
  // tokens back, and the draft goes on around the cycle instead of stopping at the sequence's end.
  EXPECT_EQ(draft_of({3, 1, 2, 1, 2, 1, 2}, 5), (std::vector<int32_t>{1, 2, 1, 2, 1}));
  EXPECT_EQ(draft_of({3, 4, 8, 8, 8, 8}, 4), (std::vector<int32_t>{8, 8, 8, 8}));
  // A period of 3 found through a 1-token suffix.
  EXPECT_EQ(draft_of({5, 6, 7, 5}, 7), (std::vector<int32_t>{6, 7, 5, 6, 7, 5, 6}));
}

TEST(NgramDraft, EqualsTheReferenceOnRandomTexts) {
  std::mt19937 rng(11);
  std::vector<int32_t> draft;
  for (int32_t trial = 0; trial < 2000; ++trial) {
    std::vector<int32_t> tokens(1 + rng() % 40);
    const uint32_t alphabet = 2 + rng() % 6;  // small: suffixes recur at every distance
    for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % alphabet);
    const auto max_draft = static_cast<int32_t>(rng() % 10);
    ngram_draft(tokens, max_draft, draft);
    ASSERT_EQ(draft, reference_draft(tokens, max_draft)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace vks::sched
