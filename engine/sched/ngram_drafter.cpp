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
      const int64_t from = i + n;
      const int64_t to = std::min<int64_t>(size, from + max_draft);
      draft.assign(tokens.begin() + from, tokens.begin() + to);
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
