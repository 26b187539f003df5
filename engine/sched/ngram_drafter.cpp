#include "engine/sched/ngram_drafter.h"

#include "engine/sched/drafter.h"

#include <algorithm>

namespace vks::sched {

void ngram_draft(std::span<const int32_t> tokens, int32_t max_draft, std::vector<int32_t>& draft) {
  draft.clear();
  const int64_t size = static_cast<int64_t>(tokens.size());
  if (max_draft <= 0) return;
  for (int64_t n = kNgramMax; n >= kNgramMin; --n) {
    if (size <= n) continue;
    const auto suffix = tokens.subspan(static_cast<size_t>(size - n));
    // Latest first: a repetition's most recent round predicts its next round best.
    for (int64_t i = size - n - 1; i >= 0; --i) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + i)) continue;
      // An occurrence p tokens back says the text repeats with period p: when p is shorter than
      // the draft, the draft repeats itself (a greedy cycle of period 1 or 2, where lookup pays
      // most, would otherwise draft only 1 or 2 tokens a step).
      const int64_t from = i + n;
      const int64_t period = size - from;
      for (int64_t j = 0; j < max_draft; ++j) {
        draft.push_back(j < period ? tokens[static_cast<size_t>(from + j)] : draft[static_cast<size_t>(j - period)]);
      }
      return;
    }
  }
}

namespace {
class NgramDrafter : public Drafter {
 public:
  void draft(std::span<const DraftJob> jobs) override {
    for (const DraftJob& job : jobs) ngram_draft(job.seq->tokens, job.max, job.seq->draft);
  }
};
}  // namespace

std::unique_ptr<Drafter> make_ngram_drafter() { return std::make_unique<NgramDrafter>(); }

}  // namespace vks::sched
