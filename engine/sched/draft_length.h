#pragma once
// How many tokens to draft for one request next step (adaptive speculative decoding). A rejected
// draft costs its verification rows and buys nothing, so the length follows the acceptance: it
// grows by one after a fully accepted draft, drops to one more than what was accepted otherwise,
// and after kMissesToPause drafts in a row with nothing accepted drafting pauses for a number of
// steps that doubles with each pause (kMinPause..kMaxPause, back to kMinPause after an accepted
// token). A request whose text never repeats thus pays about one verified row every kMinPause+
// steps at first and one every kMaxPause steps later.
#include <algorithm>
#include <cstdint>

namespace vks::sched {

inline constexpr int32_t kMaxDraftTokens = 16;  // per request per step (the `speculative` field's bound)

class DraftLength {
 public:
  static constexpr int32_t kMissesToPause = 3;
  static constexpr int32_t kMinPause = 8;
  static constexpr int32_t kMaxPause = 128;

  explicit DraftLength(int32_t max_len = 0) : max_(std::clamp(max_len, 0, kMaxDraftTokens)), cur_(max_) {}

  bool enabled() const { return max_ > 0; }
  // Tokens to draft now (0: speculation off or paused).
  int32_t next() const { return paused_ > 0 ? 0 : cur_; }
  // A step in which this request decoded without a draft (paused, or nothing to propose).
  void on_plain_step() {
    if (paused_ > 0) --paused_;
  }
  void on_verified(int32_t drafted, int32_t accepted) {
    drafted_ += drafted;
    accepted_ += accepted;
    if (drafted <= 0) return;
    if (accepted == drafted) {
      cur_ = std::min(max_, cur_ + 1);
    } else {
      cur_ = std::max(1, std::min(cur_ - 1, accepted + 1));
    }
    if (accepted > 0) {
      misses_ = 0;
      pause_ = kMinPause;
    } else if (++misses_ >= kMissesToPause) {
      misses_ = 0;
      paused_ = pause_;
      pause_ = std::min(kMaxPause, pause_ * 2);
    }
  }
  int64_t drafted() const { return drafted_; }
  int64_t accepted() const { return accepted_; }

 private:
  int32_t max_;
  int32_t cur_;
  int32_t misses_ = 0;
  int32_t paused_ = 0;
  int32_t pause_ = kMinPause;
  int64_t drafted_ = 0;
  int64_t accepted_ = 0;
};

}  // namespace vks::sched
