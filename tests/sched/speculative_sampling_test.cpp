// Speculative sampling with a deterministic draft (Sampler::sample_with_draft) draws exactly the
// target distribution: on a real stories260K logits row, with temperature alone and with top-k/top-p
// truncation, for a likely draft, a less likely one and one outside the truncated support, the
// token frequencies of many draws match the distribution sample() draws from (chi-square at
// p = 1e-6, fixed seeds, so the outcome is deterministic), and the acceptance rate is p(draft). A
// naive scheme (on rejection, draw from p with the draft's mass left in) fails the same test.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/cpu/cpu_runner.h"
#include "engine/model/llama_model.h"
#include "engine/sched/sampler.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/common/test_models.h"

namespace vks::sched {
namespace {

constexpr int32_t kDraws = 20000;

std::vector<float> stories_logits() {
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  auto tok = Tokenizer::from_gguf(model->file());
  CpuRunnerOptions o;
  o.block_size = 16;
  o.num_blocks = 8;
  o.threads = 1;
  CpuRunner runner(*model, o);
  StepBatch b;
  b.tokens = tok->encode("Once upon a time, there was a little", true);
  SeqChunk s;
  s.n_tokens = static_cast<int32_t>(b.tokens.size());
  s.block_table = {0, 1, 2, 3};
  s.logits = LogitsMode::kFull;
  b.seqs = {s};
  b.finalize(o.block_size);
  StepResult r;
  runner.step(b, r);
  return r.logits;
}

// The distribution sample() draws from: the candidates it keeps, weighted exp((l - max) / T).
std::map<int32_t, double> target(std::span<const float> logits, const SamplingParams& p) {
  std::vector<Candidate> c = sorted_candidates(logits, p.top_k);
  keep_top_p(c, p.top_p);
  std::map<int32_t, double> out;
  double total = 0;
  for (const Candidate& x : c) total += out[x.id] = std::exp((x.logit - c.front().logit) / p.temperature);
  for (auto& [id, w] : out) w /= total;
  return out;
}

// Pearson's statistic over the tokens expected >= 5 times (the rest pooled into one bin), and
// its critical value at p = 1e-6 (Wilson-Hilferty).
bool fits(const std::map<int32_t, int32_t>& counts, const std::map<int32_t, double>& p, double& chi2, double& crit) {
  chi2 = 0;
  double pooled_expected = 0, pooled_seen = 0;
  int32_t bins = 0;
  for (const auto& [id, pr] : p) {
    const double e = pr * kDraws;
    const double seen = counts.count(id) ? counts.at(id) : 0;
    if (e >= 5) {
      chi2 += (seen - e) * (seen - e) / e;
      ++bins;
    } else {
      pooled_expected += e;
      pooled_seen += seen;
    }
  }
  for (const auto& [id, n] : counts) {
    if (!p.count(id)) pooled_seen += n;  // outside the support: must not happen
  }
  if (pooled_expected > 0) {
    chi2 += (pooled_seen - pooled_expected) * (pooled_seen - pooled_expected) / pooled_expected;
    ++bins;
  } else if (pooled_seen > 0) {
    chi2 = INFINITY;
  }
  const double df = bins - 1, z = 4.753;  // one-sided 1e-6
  crit = df * std::pow(1 - 2 / (9 * df) + z * std::sqrt(2 / (9 * df)), 3);
  return chi2 < crit;
}

TEST(SpeculativeSampling, DraftedDrawsHaveTheTargetDistribution) {
  const std::vector<float> logits = stories_logits();
  ASSERT_FALSE(logits.empty());
  SamplingParams plain_t;
  plain_t.temperature = 0.8f;
  SamplingParams truncated;
  truncated.temperature = 1.0f;
  truncated.top_k = 40;
  truncated.top_p = 0.9f;
  for (const SamplingParams& params : {plain_t, truncated}) {
    const std::map<int32_t, double> p = target(logits, params);
    const std::vector<Candidate> ranked = sorted_candidates(logits, 0);
    // The likeliest token, the third, and one the truncation leaves out (p = 0 with top_k 40).
    for (int32_t rank : {0, 2, 100}) {
      const int32_t draft = ranked[static_cast<size_t>(rank)].id;
      const double p_draft = p.count(draft) ? p.at(draft) : 0.0;
      Sampler spec(params, -1, 1234 + static_cast<uint64_t>(rank));
      Sampler plain(params, -1, 99 + static_cast<uint64_t>(rank));
      std::map<int32_t, int32_t> with_draft, without;
      int32_t accepted_n = 0;
      for (int32_t i = 0; i < kDraws; ++i) {
        bool accepted = false;
        const GeneratedToken t = spec.sample_with_draft(logits, {}, {}, draft, accepted);
        ++with_draft[t.id];
        accepted_n += accepted ? 1 : 0;
        EXPECT_EQ(accepted, t.id == draft);
        ++without[plain.sample(logits, {}, {}).id];
      }
      double chi2 = 0, crit = 0;
      EXPECT_TRUE(fits(without, p, chi2, crit)) << "plain sampling itself: chi2 " << chi2 << " > " << crit;
      EXPECT_TRUE(fits(with_draft, p, chi2, crit))
          << "T " << params.temperature << " top_k " << params.top_k << " draft rank " << rank << ": chi2 " << chi2
          << " > " << crit;
      // Accepted exactly as often as p(draft), within 5 standard deviations.
      const double sd = std::sqrt(p_draft * (1 - p_draft) / kDraws);
      EXPECT_NEAR(static_cast<double>(accepted_n) / kDraws, p_draft, 5 * sd + 1e-12) << "rank " << rank;
    }
  }
}

// The test can fail: leaving the draft's mass in the rejection draw over-weights the draft.
TEST(SpeculativeSampling, NaiveRejectionFailsTheSameTest) {
  const std::vector<float> logits = stories_logits();
  SamplingParams params;
  params.temperature = 0.8f;
  const std::map<int32_t, double> p = target(logits, params);
  const int32_t draft = sorted_candidates(logits, 0)[0].id;
  Sampler s(params, -1, 5);
  std::mt19937_64 rng(6);
  std::map<int32_t, int32_t> counts;
  for (int32_t i = 0; i < kDraws; ++i) {
    const bool accept = uniform01(rng) < p.at(draft);
    ++counts[accept ? draft : s.sample(logits, {}, {}).id];
  }
  double chi2 = 0, crit = 0;
  EXPECT_FALSE(fits(counts, p, chi2, crit)) << "chi2 " << chi2 << " < " << crit << " with p(draft) " << p.at(draft);
}

TEST(SpeculativeSampling, GreedyAcceptsOnlyTheArgmax) {
  const std::vector<float> logits = stories_logits();
  SamplingParams greedy;
  greedy.temperature = 0;
  Sampler s(greedy, -1, 1);
  const std::vector<Candidate> ranked = sorted_candidates(logits, 0);
  bool accepted = false;
  EXPECT_EQ(s.sample_with_draft(logits, {}, {}, ranked[0].id, accepted).id, ranked[0].id);
  EXPECT_TRUE(accepted);
  EXPECT_EQ(s.sample_with_draft(logits, {}, {}, ranked[1].id, accepted).id, ranked[0].id);
  EXPECT_FALSE(accepted);
}

}  // namespace
}  // namespace vks::sched
