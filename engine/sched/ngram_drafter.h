#pragma once
// Prompt-lookup drafting (the n-gram drafter of speculative decoding): the tokens that followed
// the latest earlier occurrence of the sequence's current suffix are guessed to follow it again.
// Repetitive continuations and answers that quote the prompt are where this finds long drafts.
#include <cstdint>
#include <span>
#include <vector>

namespace vks::sched {

inline constexpr int32_t kNgramMax = 3;  // suffix lengths tried, longest first
inline constexpr int32_t kNgramMin = 1;

// Fills `draft` (cleared first, capacity reused) with max_draft tokens: for n = kNgramMax down to
// kNgramMin, the latest i < size - n with tokens[i, i+n) equal to the last n tokens gives
// tokens[i+n, ...), continued periodically past the end (period size - i - n: the text after the
// occurrence is taken to repeat). Empty when no suffix occurred before. O(size * kNgramMax), no
// allocation once `draft` holds max_draft.
void ngram_draft(std::span<const int32_t> tokens, int32_t max_draft, std::vector<int32_t>& draft);

}  // namespace vks::sched
