#pragma once
// Per-request token sampling with llama.cpp semantics and order:
//   logit_bias → penalties (repetition, presence, frequency over the last penalty_last_n tokens of
//   prompt + generated) → top_k → top_p → min_p → temperature → draw.
// top_k/top_p/min_p act on the pre-temperature distribution, as in llama.cpp's default chain.
// temperature 0 is greedy: the argmax of the biased/penalised logits (ties: lowest id).
// With temperature only (no top_k/top_p) nothing is sorted: the draw walks the tokens in id order.
// Each request owns its RNG (std::mt19937_64 seeded from its seed), and the draw depends only on its
// own logits and RNG, so the same seed and prompt give the same output whatever else is batched.
// Logprobs (choice documented for the protocol): log-softmax of the logits after logit_bias,
// penalties and min_tokens suppression, before temperature and truncation (vLLM's "processed"
// logprobs without temperature). The chosen token's logprob and the top-N (N <= 20) come from it.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "engine/sched/engine.h"

namespace vks::sched {

struct Candidate {
  int32_t id = 0;
  float logit = 0;
};

// The pure stages, exposed for tests. Candidates are kept sorted by logit desc, then id asc.
void apply_logit_bias(std::span<float> logits, const std::vector<std::pair<TokenId, float>>& bias);
void apply_penalties(std::span<float> logits, std::span<const int32_t> history, const SamplingParams& p);
std::vector<Candidate> sorted_candidates(std::span<const float> logits, int32_t top_k);  // top_k 0: all
void keep_top_p(std::vector<Candidate>& c, float top_p);
// sorted_candidates(logits, 0) + keep_top_p, without sorting the whole vocabulary.
std::vector<Candidate> top_p_candidates(std::span<const float> logits, float top_p);
void keep_min_p(std::vector<Candidate>& c, float min_p);
// Uniform double in [0, 1) from 53 random bits (std::uniform_real_distribution is not portable).
double uniform01(std::mt19937_64& rng);

class Sampler {
 public:
  // n_logprobs: top-N alternatives (0..20), -1 = no logprobs at all.
  Sampler(const SamplingParams& params, int32_t n_logprobs, uint64_t seed);

  bool greedy() const { return params_.temperature == 0.0f; }
  // False when the device's argmax is all this request needs for its next token.
  bool needs_full_logits(bool suppressing) const;

  // Chooses the next token from one raw logits row. history = prompt + generated tokens;
  // suppressed = ids that may not be chosen now (EOS and stop ids before min_tokens).
  // allowed = grammar mask (bit per id; ids past it are disallowed), or null; applied first, so
  // logprobs are those of the constrained distribution.
  GeneratedToken sample(std::span<const float> logits, std::span<const int32_t> history,
                        std::span<const int32_t> suppressed, const std::vector<uint64_t>* allowed = nullptr);
  // The token chosen by the device argmax (only valid when !needs_full_logits()).
  GeneratedToken from_argmax(int32_t id) const;
  // Speculative sampling with a deterministic draft (prompt lookup proposes one token, q = 1 at
  // `draft`): with p the distribution sample() draws from (same processing, truncation and
  // temperature), `draft` is accepted with probability p(draft); otherwise a token is drawn from p
  // with draft's mass removed and renormalized. P(draft) = p(draft) and P(x) = (1 - p(draft)) *
  // p(x) / (1 - p(draft)) = p(x): exactly sample()'s distribution. Both draws are sample()'s one
  // inverse-CDF draw (accepted iff it lands on the draft), so a seed gives sample()'s very tokens.
  // `accepted` says which; a greedy sampler accepts iff draft is sample()'s argmax.
  GeneratedToken sample_with_draft(std::span<const float> logits, std::span<const int32_t> history,
                                   std::span<const int32_t> suppressed, int32_t draft, bool& accepted,
                                   const std::vector<uint64_t>* allowed = nullptr);

 private:
  SamplingParams params_;
  int32_t n_logprobs_;
  std::mt19937_64 rng_;
  // Temperature draw over the whole vocabulary (no rank-based truncation) without a candidate list.
  int32_t draw_untruncated();
  // The candidates top_k (then top_p, min_p) or top_p (then min_p) keep of work_; false, cands
  // left empty, when neither truncates.
  bool truncated_candidates(std::vector<Candidate>& cands) const;
  // work_ = logits after NaN, grammar, bias, penalties and suppression (sample()'s processing).
  void process(std::span<const float> logits, std::span<const int32_t> history, std::span<const int32_t> suppressed,
               const std::vector<uint64_t>* allowed);
  // out.logprob / out.top from work_ (sample()'s logprobs).
  void fill_logprobs(GeneratedToken& out) const;

  std::vector<float> work_;       // [vocab] processed logits, reused
  // [vocab] draw weights of draw_untruncated, reused. float holds them exactly: fexp() is a float
  // exp widened to double.
  std::vector<float> weights_;
};

}  // namespace vks::sched
