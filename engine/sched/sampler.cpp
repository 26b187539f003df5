#include "engine/sched/sampler.h"

#include "engine/grammar/grammar_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace vks::sched {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// exp over the whole vocabulary is most of the sampling cost: single precision is ~3x cheaper and
// plenty for weights that are summed in double.
double fexp(double x) { return std::exp(static_cast<float>(x)); }

bool before(const Candidate& a, const Candidate& b) {
  return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
}
}  // namespace

void apply_logit_bias(std::span<float> logits, const std::vector<std::pair<TokenId, float>>& bias) {
  for (const auto& [id, b] : bias) {
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits[id] += b;
  }
}

void apply_penalties(std::span<float> logits, std::span<const int32_t> history, const SamplingParams& p) {
  if (p.penalty_last_n == 0) return;
  if (p.repetition_penalty == 1.0f && p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f) return;
  const size_t n = p.penalty_last_n < 0 ? history.size() : std::min<size_t>(history.size(), p.penalty_last_n);
  std::unordered_map<int32_t, int32_t> counts;
  for (int32_t t : history.subspan(history.size() - n)) ++counts[t];
  for (const auto& [id, count] : counts) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    float& l = logits[id];
    // llama.cpp: divide positive logits, multiply negative ones, then the OpenAI-style terms.
    l = l <= 0 ? l * p.repetition_penalty : l / p.repetition_penalty;
    l -= static_cast<float>(count) * p.frequency_penalty + (count > 0 ? 1.0f : 0.0f) * p.presence_penalty;
  }
}

std::vector<Candidate> sorted_candidates(std::span<const float> logits, int32_t top_k) {
  std::vector<Candidate> c;
  c.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    if (!std::isnan(l) && l != kNegInf) c.push_back({static_cast<int32_t>(i), l});
  }
  if (top_k > 0 && static_cast<size_t>(top_k) < c.size()) {
    std::partial_sort(c.begin(), c.begin() + top_k, c.end(), before);
    c.resize(top_k);
  } else {
    std::sort(c.begin(), c.end(), before);
  }
  return c;
}

namespace {
// Keeps the shortest prefix of c (sorted) whose probability mass reaches top_p of `total` (the sum of
// exp(logit - c.front().logit) over the whole distribution), at least one token.
void keep_top_p_of(std::vector<Candidate>& c, float top_p, double total) {
  const double max_l = c.front().logit;
  double cum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    cum += fexp(static_cast<double>(c[i].logit) - max_l) / total;
    if (cum >= top_p) {  // keep the token that crosses p (llama.cpp)
      c.resize(i + 1);
      return;
    }
  }
}
}  // namespace

void keep_top_p(std::vector<Candidate>& c, float top_p) {
  if (top_p >= 1.0f || c.size() <= 1) return;
  const double max_l = c.front().logit;
  double total = 0;
  for (const Candidate& x : c) total += fexp(static_cast<double>(x.logit) - max_l);
  keep_top_p_of(c, top_p, total);
}

std::vector<Candidate> top_p_candidates(std::span<const float> logits, float top_p) {
  float max_f = kNegInf;
  for (const float l : logits) {
    if (!std::isnan(l) && l > max_f) max_f = l;
  }
  if (max_f == kNegInf || top_p >= 1.0f) return sorted_candidates(logits, 0);
  const double max_l = max_f;
  std::vector<Candidate> c;
  c.reserve(logits.size());
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    if (std::isnan(l) || l == kNegInf) continue;
    c.push_back({static_cast<int32_t>(i), l});
    total += fexp(static_cast<double>(l) - max_l);
  }
  // Sorting the whole vocabulary is the expensive part; the nucleus is usually far smaller, so sort
  // a growing head until it holds top_p of the mass (the head of a partial sort is exactly the head
  // of the full sort: the order is total).
  for (size_t k = 256;; k *= 8) {
    if (k >= c.size()) {
      std::sort(c.begin(), c.end(), before);
      break;
    }
    std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k), c.end(), before);
    double mass = 0;
    for (size_t i = 0; i < k; ++i) mass += fexp(static_cast<double>(c[i].logit) - max_l);
    if (mass >= top_p * total) {
      c.resize(k);
      break;
    }
  }
  keep_top_p_of(c, top_p, total);
  return c;
}

void keep_min_p(std::vector<Candidate>& c, float min_p) {
  if (min_p <= 0.0f || c.empty()) return;
  // p_i >= min_p * p_max  <=>  logit_i >= logit_max + log(min_p)
  const double threshold = static_cast<double>(c.front().logit) + std::log(static_cast<double>(min_p));
  size_t keep = 1;
  while (keep < c.size() && static_cast<double>(c[keep].logit) >= threshold) ++keep;
  c.resize(keep);
}

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

Sampler::Sampler(const SamplingParams& params, int32_t n_logprobs, uint64_t seed)
    : params_(params), n_logprobs_(n_logprobs), rng_(seed) {}

bool Sampler::needs_full_logits(bool suppressing) const {
  const bool penalties = params_.penalty_last_n != 0 &&
                         (params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                          params_.frequency_penalty != 0.0f);
  return !greedy() || n_logprobs_ >= 0 || !params_.logit_bias.empty() || penalties || suppressing;
}

GeneratedToken Sampler::from_argmax(int32_t id) const {
  GeneratedToken t;
  t.id = id;
  return t;
}

// No rank-based truncation: no O(V log V) sort and no candidate list (on a GPU the engine samples
// 16 sequences between steps of a few ms, so this loop is on the critical path). The draw runs over
// the tokens in the order max first, then ids ascending, summing the same weights in the same order
// as a candidate list would: a seed gives the same token it always did.
bool Sampler::truncated_candidates(std::vector<Candidate>& cands) const {
  if (params_.top_k > 0) {
    cands = sorted_candidates(work_, params_.top_k);
    keep_top_p(cands, params_.top_p);
  } else if (params_.top_p < 1.0f) {
    cands = top_p_candidates(work_, params_.top_p);
  } else {
    return false;
  }
  keep_min_p(cands, params_.min_p);
  return true;
}

int32_t Sampler::draw_untruncated() {
  const auto max_it = std::max_element(work_.begin(), work_.end());
  if (max_it == work_.end() || *max_it == kNegInf) return -1;
  const size_t max_id = static_cast<size_t>(max_it - work_.begin());
  const double max_l = *max_it;
  const double threshold = params_.min_p > 0.0f ? max_l + std::log(static_cast<double>(params_.min_p))
                                                : -std::numeric_limits<double>::infinity();
  const double inv_t = 1.0 / params_.temperature;
  weights_.resize(work_.size());
  const auto weight = [&](size_t i) { return static_cast<float>(fexp((work_[i] - max_l) * inv_t)); };
  double total = weights_[max_id] = weight(max_id);
  size_t last = max_id;  // where the draw lands if rounding leaves u past the final sum
  for (size_t i = 0; i < work_.size(); ++i) {
    if (i == max_id) continue;
    const bool kept = work_[i] != kNegInf && static_cast<double>(work_[i]) >= threshold;
    weights_[i] = kept ? weight(i) : 0.0f;
    if (kept) {
      total += weights_[i];
      last = i;
    }
  }
  const double u = uniform01(rng_) * total;
  double cum = weights_[max_id];
  if (u < cum) return static_cast<int32_t>(max_id);
  for (size_t i = 0; i < work_.size(); ++i) {
    if (i == max_id || weights_[i] == 0.0f) continue;
    cum += weights_[i];
    if (u < cum) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last);
}

void Sampler::process(std::span<const float> logits, std::span<const int32_t> history,
                      std::span<const int32_t> suppressed, const std::vector<uint64_t>* allowed) {
  work_.assign(logits.begin(), logits.end());
  for (float& l : work_) if (std::isnan(l)) l = kNegInf;
  if (allowed) {
    const size_t n_bits = allowed->size() * 64;
    for (size_t i = 0; i < work_.size(); ++i) {
      if (i >= n_bits || !grammar::mask_has(*allowed, static_cast<TokenId>(i))) work_[i] = kNegInf;
    }
  }
  apply_logit_bias(work_, params_.logit_bias);
  apply_penalties(work_, history, params_);
  for (int32_t id : suppressed) if (id >= 0 && static_cast<size_t>(id) < work_.size()) work_[id] = kNegInf;
}

GeneratedToken Sampler::sample(std::span<const float> logits, std::span<const int32_t> history,
                               std::span<const int32_t> suppressed, const std::vector<uint64_t>* allowed) {
  process(logits, history, suppressed, allowed);

  GeneratedToken out;
  std::vector<Candidate> cands;
  bool drawn = false;  // the candidate is already the draw (greedy, or draw_untruncated)
  if (greedy()) {
    int32_t best = -1;
    for (size_t i = 0; i < work_.size(); ++i) {
      if (work_[i] != kNegInf && (best < 0 || work_[i] > work_[best])) best = static_cast<int32_t>(i);
    }
    if (best >= 0) cands.push_back({best, work_[best]});
    drawn = true;
  } else if (!truncated_candidates(cands)) {
    const int32_t id = draw_untruncated();
    if (id >= 0) cands.push_back({id, work_[static_cast<size_t>(id)]});
    drawn = true;
  }
  if (cands.empty()) {  // everything masked: fall back to the raw argmax rather than fail
    out.id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  } else if (drawn) {
    out.id = cands.front().id;
  } else {
    const double inv_t = 1.0 / params_.temperature;
    const double max_l = cands.front().logit;
    std::vector<double> w(cands.size());
    double total = 0;
    for (size_t i = 0; i < cands.size(); ++i) total += w[i] = fexp((cands[i].logit - max_l) * inv_t);
    const double u = uniform01(rng_) * total;
    double cum = 0;
    out.id = cands.back().id;
    for (size_t i = 0; i < cands.size(); ++i) {
      cum += w[i];
      if (u < cum) {
        out.id = cands[i].id;
        break;
      }
    }
  }
  fill_logprobs(out);
  return out;
}

void Sampler::fill_logprobs(GeneratedToken& out) const {
  if (n_logprobs_ < 0) return;
  double max_l = kNegInf;
  for (float l : work_) max_l = std::max<double>(max_l, l);
  if (max_l == kNegInf) return;  // nothing finite: no meaningful logprobs
  double total = 0;
  for (float l : work_) total += fexp(static_cast<double>(l) - max_l);
  const double log_z = max_l + std::log(total);
  out.logprob = static_cast<float>(static_cast<double>(work_[out.id]) - log_z);
  if (n_logprobs_ > 0) {
    for (const Candidate& c : sorted_candidates(work_, n_logprobs_)) {
      out.top.push_back({c.id, static_cast<float>(static_cast<double>(c.logit) - log_z)});
    }
  }
}

GeneratedToken Sampler::sample_with_draft(std::span<const float> logits, std::span<const int32_t> history,
                                          std::span<const int32_t> suppressed, int32_t draft, bool& accepted,
                                          const std::vector<uint64_t>* allowed) {
  // Drawing x from p by inverse CDF with one uniform and accepting iff x == draft is the rejection
  // scheme itself: P(accept) = p(draft), and a rejected draw lands on p without the draft's mass.
  GeneratedToken out = sample(logits, history, suppressed, allowed);
  accepted = out.id == draft;
  return out;
}

}  // namespace vks::sched
