#pragma once
// How many tokens to draft for one request next step (speculative decoding), chosen so that
// speculation pays on the backend at hand. A step verifying k drafted tokens emits 1 + (accepted)
// tokens but costs what a step of k more tokens costs, and that cost is the backend's: on a GPU a
// decode step is bound by reading the weights, so a few more tokens are nearly free; on the CPU
// backend the integer kernels are compute-bound, how much depends on the ISA level (TinyLlama Q4_0
// on this project's 2-core machine: a 4-token step costs ~1.6 decode steps and a 7-token one ~3.2
// with the AVX2 tiles, 1.38 and 1.85 with the AVX-512 VNNI ones). So:
//   StepCost (one per engine) learns the runner's time of decode steps by their token count,
//   robust to a shared machine's stretched steps and re-measured from time to time;
//   DraftLength (one per request) learns the request's acceptance (of a draft's first token, and of
//   each later one after a right predecessor), from
//   verified drafts and from "shadow" drafts (proposed but not verified, compared with the tokens
//   plain decoding then emits: free, so a request that stopped speculating keeps measuring and
//   starts again when its text begins to repeat, with no probe step);
//   choose_draft picks the k that maximizes expected tokens per unit of step time, and 0 unless
//   that beats plain decoding by kMinGain (estimates are noisy: speculation must never lose).
// A draft model's drafts are not free: each draft token is one step of the draft model (all
// sequences batched). The engine learns that time too (a StepCost of one width) and chooses each
// request's draft length before drafting, with the drafting in the cost; a request whose drafts do
// not pay is drafted for only in rare shadow probes (DraftLength::probe_due), so a draft model that
// guesses badly costs a few percent of decoding, not a multiple of it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace vks::sched {

inline constexpr int32_t kMaxDraftTokens = 16;  // per request per step (the `speculative` field's bound)

// Runner milliseconds of decode-only steps (every chunk one token plus its draft) by tokens in the
// step. Per count, the least of its last kSamples times: on a shared machine other processes only
// ever stretch a step, and one stretched sample must not make a width look expensive for good. A
// count not measured in the last kStaleSteps recorded steps is stale: its estimate halves every
// kHalfLife steps (down to the optimistic extrapolation), so a width judged in a bad moment is tried
// again, soon if it nearly paid and rarely if it was far off (each probe costs a wide step); its
// samples still shape the estimates of the counts around it.
// Engine thread only.
class StepCost {
 public:
  static constexpr int32_t kMaxTokens = 256;  // wider steps are not recorded (extrapolated)
  static constexpr int32_t kSamples = 4;
  static constexpr int64_t kStaleSteps = 64;
  static constexpr double kHalfLife = 256;
  // An unmeasured count costs, per token beyond the nearest measured count below, what the measured
  // counts up to it cost per token; with one measured count, this fraction of that step's time per
  // token: a guess between a GPU's nearly free tokens and a compute-bound CPU's, so a width is tried
  // once shadow drafts show a request whose acceptance would pay for it, and then known.
  static constexpr double kProbeSlope = 0.5;

  StepCost() : widths_(kMaxTokens + 1) {}

  void record(int32_t n_tokens, double ms) {
    if (n_tokens < 1 || n_tokens > kMaxTokens || !(ms > 0) || !std::isfinite(ms)) return;
    ++clock_;
    Width& w = widths_[static_cast<size_t>(n_tokens)];
    if (w.count > 0 && clock_ - w.stamp > kStaleSteps) w.count = w.next = 0;  // judged again from scratch
    w.ms[w.next] = ms;
    w.next = (w.next + 1) % kSamples;
    w.count = std::min(w.count + 1, kSamples);
    w.stamp = clock_;
  }
  // Samples of n tokens held (0..kSamples).
  int32_t samples(int32_t n_tokens) const {
    return n_tokens >= 1 && n_tokens <= kMaxTokens ? widths_[static_cast<size_t>(n_tokens)].count : 0;
  }
  bool measured(int32_t n_tokens) const {
    if (n_tokens < 1 || n_tokens > kMaxTokens) return false;
    const Width& w = widths_[static_cast<size_t>(n_tokens)];
    return w.count > 0 && clock_ - w.stamp <= kStaleSteps;
  }
  // Estimated ms of a step of n tokens; 0 when no step at or below n was measured (unknown).
  double estimate(int32_t n_tokens) const {
    if (n_tokens < 1) return 0;
    if (measured(n_tokens)) return least(n_tokens);
    int32_t lo = std::min(n_tokens, kMaxTokens + 1) - 1;
    while (lo >= 1 && samples(lo) == 0) --lo;
    if (lo < 1) return 0;
    const double v_lo = least(lo);
    double est = v_lo + per_token_beyond(lo) * (n_tokens - lo);
    for (int32_t hi = n_tokens + 1; hi <= kMaxTokens; ++hi) {
      if (samples(hi) == 0) continue;
      est = std::min(est, v_lo + (least(hi) - v_lo) * (n_tokens - lo) / (hi - lo));
      break;
    }
    if (n_tokens <= kMaxTokens && widths_[static_cast<size_t>(n_tokens)].count > 0) {  // stale
      const auto age = static_cast<double>(clock_ - widths_[static_cast<size_t>(n_tokens)].stamp - kStaleSteps);
      est = std::max(est, least(n_tokens) * std::exp2(-age / kHalfLife));
    }
    return est;
  }

 private:
  struct Width {
    double ms[kSamples] = {};
    int32_t count = 0;
    int32_t next = 0;
    int64_t stamp = 0;  // clock_ at its last sample
  };
  // What each token past the measured width lo adds: the measured slope from the narrowest measured
  // width up to lo (a backend's wider steps cost what its measured ones say, 6% of a decode step a
  // token on this project's CPU with VNNI tiles, 120% without), the guess when lo is all that is known.
  double per_token_beyond(int32_t lo) const {
    int32_t narrow = 1;
    while (narrow < lo && samples(narrow) == 0) ++narrow;
    if (narrow == lo) return kProbeSlope * least(lo) / lo;
    return std::max(0.0, (least(lo) - least(narrow)) / (lo - narrow));
  }
  double least(int32_t n_tokens) const {
    const Width& w = widths_[static_cast<size_t>(n_tokens)];
    return *std::min_element(w.ms, w.ms + w.count);
  }

  std::vector<Width> widths_;  // [n] for n = 1..kMaxTokens
  int64_t clock_ = 0;          // decode steps recorded
};

class DraftLength {
 public:
  static constexpr double kDecay = 0.9;    // weight of the older acceptance observations, per draft
  static constexpr double kMinGain = 1.05;  // speculate only for 5% more tokens per ms than plain
  static constexpr double kProbeBudget = 0.03;  // the share of plain decoding time shadow probes may cost

  explicit DraftLength(int32_t max_len = 0) : max_(std::clamp(max_len, 0, kMaxDraftTokens)) {}

  bool enabled() const { return max_ > 0; }
  int32_t max() const { return max_; }
  // Acceptance as a two-state chain: the first drafted token is right with probability
  // first_acceptance(), each later one, given its predecessor was, with run_acceptance(); both the
  // decayed share of such tokens that were right, with a prior of one hit and one miss. Drafts tend
  // to be right or wrong as a whole (prompt lookup inside a quote or a cycle is right to its end,
  // outside one wrong from its first token), which one per-token probability would average into a
  // middling value that undervalues long drafts.
  double first_acceptance() const { return (first_hits_ + 1) / (first_hits_ + first_misses_ + 2); }
  double run_acceptance() const { return (run_hits_ + 1) / (run_hits_ + run_misses_ + 2); }
  // Whether any draft's first token, verified or shadow, was ever right: until then acceptance is
  // the prior alone.
  bool seen_hit() const { return first_hits_ > 0; }
  // Expected tokens a draft of k adds to the one a step emits anyway: a1 (1 + ar + ... + ar^(k-1)).
  double expected_extra(int32_t k) const {
    const double ar = run_acceptance();
    double sum = 0, p = first_acceptance();
    for (int32_t i = 0; i < k; ++i, p *= ar) sum += p;
    return sum;
  }

  // A verified draft of `drafted` tokens, the first `accepted` of them right.
  void on_verified(int32_t drafted, int32_t accepted) {
    if (drafted <= 0) return;
    drafted_ += drafted;
    accepted_ += accepted;
    observe(accepted, accepted < drafted);
    shadow_.clear();
  }
  // A draft proposed but not verified: compared with the tokens the request emits next.
  void set_shadow(std::span<const int32_t> draft) {
    if (!shadow_.empty() || draft.empty()) return;  // one at a time: each observed once
    shadow_.assign(draft.begin(), draft.end());
    shadow_pos_ = 0;
  }
  bool has_shadow() const { return !shadow_.empty(); }
  // Every token the request emits (after its shadow draft was set).
  // Counted token by token, so the step after a shadow draft's first token was right can draft
  // (a shadow of 6 right tokens would otherwise keep a request that entered a repeat from drafting
  // for 6 steps); the shadow's end adds nothing more.
  void on_emitted(int32_t id) {
    if (shadow_.empty()) return;
    const bool right = shadow_[shadow_pos_] == id;
    if (shadow_pos_ == 0) {
      decay();
      (right ? first_hits_ : first_misses_) += 1;
    } else {
      (right ? run_hits_ : run_misses_) += 1;
    }
    if (!right || ++shadow_pos_ == shadow_.size()) shadow_.clear();
  }
  // Whether a request not worth drafting for gets a shadow draft now (its acceptance re-measured),
  // called once per step it is not drafted for: a probe costing probe_ms is due once the plain steps
  // since the last one (step_ms each) add up to probe_ms / kProbeBudget. A free drafter (prompt
  // lookup, probe_ms ~0) probes every step.
  bool probe_due(double probe_ms, double step_ms) {
    waited_ms_ += step_ms;
    if (waited_ms_ * kProbeBudget < probe_ms) return false;
    waited_ms_ = 0;
    return true;
  }
  int64_t drafted() const { return drafted_; }
  int64_t accepted() const { return accepted_; }

  // The drafter's record over finished requests (a draft model's quality is the pair's, not the
  // text's): `finished`'s observations added to this one's, older ones halved per request.
  void merge(const DraftLength& finished) {
    first_hits_ = 0.5 * first_hits_ + finished.first_hits_;
    first_misses_ = 0.5 * first_misses_ + finished.first_misses_;
    run_hits_ = 0.5 * run_hits_ + finished.run_hits_;
    run_misses_ = 0.5 * run_misses_ + finished.run_misses_;
  }
  // A new request's acceptance starts from `record` (the drafter's on earlier requests), weighing at
  // most kPriorWeight observations of each kind, so the request's own soon outweigh it: a draft
  // model that has been right drafts from a request's first steps (no shadow probe first, which
  // would have to feed it the whole prompt), one that has not is probed as before.
  static constexpr double kPriorWeight = 2;
  void start_from(const DraftLength& record) {
    const double first = record.first_hits_ + record.first_misses_, run = record.run_hits_ + record.run_misses_;
    const double f = first > kPriorWeight ? kPriorWeight / first : 1, r = run > kPriorWeight ? kPriorWeight / run : 1;
    first_hits_ = f * record.first_hits_;
    first_misses_ = f * record.first_misses_;
    run_hits_ = r * record.run_hits_;
    run_misses_ = r * record.run_misses_;
  }

 private:
  // A draft whose first `hits` tokens were right, then one wrong (missed) or none left to try.
  void observe(int32_t hits, bool missed) {
    decay();
    first_hits_ += hits > 0 ? 1 : 0;
    first_misses_ += hits == 0 && missed ? 1 : 0;
    run_hits_ += std::max(0, hits - 1);
    run_misses_ += hits > 0 && missed ? 1 : 0;
  }
  void decay() {  // once per draft observed
    first_hits_ *= kDecay;
    first_misses_ *= kDecay;
    run_hits_ *= kDecay;
    run_misses_ *= kDecay;
  }

  int32_t max_;
  double first_hits_ = 0, first_misses_ = 0;
  double run_hits_ = 0, run_misses_ = 0;
  std::vector<int32_t> shadow_;
  size_t shadow_pos_ = 0;
  double waited_ms_ = 0;  // plain steps' time since the last probe
  int64_t drafted_ = 0;
  int64_t accepted_ = 0;
};

// The draft length for one request in a step that already holds `step_tokens` tokens expected to
// emit `step_emitted` (its other decoding sequences and their drafts), `available` draft tokens
// proposed: the k in 0..available maximizing (step_emitted + expected_extra(k)) / cost(step_tokens + k),
// or 0 when that is not kMinGain times plain's ratio, or when the plain step's cost is unknown
// (the first steps measure it). Widths are probed one token past the widest ever measured at a
// time: a probe of an unmeasured width is a bet, and on a compute-bound backend the cheapest bet
// (one token wider) already shows that wider ones do not pay. A width measured long ago (stale)
// is known all the same: its estimate is kept, decaying, and a request that starts repeating after
// a long stretch of plain steps drafts at once at the length that paid, not one token more a step.
// Before drafting, draft_ms is the drafter's time per draft token and draft_steps the longest draft
// already chosen this step: the step's sequences draft in one batch per token, so drafting costs
// draft_ms times the longest draft. After drafting that time is spent, and the choice leaves it out.
inline int32_t choose_draft(const StepCost& cost, const DraftLength& d, int32_t step_tokens, double step_emitted,
                            int32_t available, double draft_ms = 0, int32_t draft_steps = 0) {
  const double base = cost.estimate(step_tokens);
  // No bet on the prior alone: where a wider step costs little, a1 = 0.5 would pay, and every
  // request would verify its first drafts, however rarely its drafts turn out right (prompt lookup
  // on text that does not repeat lost 5%). Its first drafts are shadows, observed instead.
  if (base <= 0 || available <= 0 || !d.seen_hit()) return 0;
  const double plain = step_emitted / (base + draft_ms * draft_steps);
  int32_t best = 0;
  double best_rate = plain * DraftLength::kMinGain;
  for (int32_t k = 1; k <= available; ++k) {
    if (cost.samples(step_tokens + k) == 0 && cost.samples(step_tokens + k - 1) == 0) break;
    double c = cost.estimate(step_tokens + k);
    if (c <= 0) break;
    c += draft_ms * std::max(k, draft_steps);
    const double rate = (step_emitted + d.expected_extra(k)) / c;
    if (rate > best_rate) {
      best_rate = rate;
      best = k;
    }
  }
  return best;
}

}  // namespace vks::sched
