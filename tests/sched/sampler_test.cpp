#include "engine/sched/sampler.h"

#include "tests/common/test_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <fstream>
#include <set>

namespace vks::sched {
namespace {

std::vector<float> random_logits(int32_t n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> l(n);
  for (float& x : l) x = d(rng);
  return l;
}

std::vector<double> softmax(const std::vector<float>& l, double t = 1.0) {
  const double m = *std::max_element(l.begin(), l.end());
  std::vector<double> p(l.size());
  double z = 0;
  for (size_t i = 0; i < l.size(); ++i) z += p[i] = std::exp((l[i] - m) / t);
  for (double& x : p) x /= z;
  return p;
}

// Straightforward references written from the definitions (llama.cpp semantics).
std::set<int32_t> ref_top_k(const std::vector<float>& l, int32_t k) {
  std::vector<int32_t> ids(l.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return l[a] != l[b] ? l[a] > l[b] : a < b; });
  return std::set<int32_t>(ids.begin(), ids.begin() + std::min<size_t>(k, ids.size()));
}
std::set<int32_t> ref_top_p(const std::vector<float>& l, double p) {
  const auto prob = softmax(l);
  std::vector<int32_t> ids(l.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return prob[a] > prob[b]; });
  std::set<int32_t> keep;
  double cum = 0;
  for (int32_t id : ids) {
    keep.insert(id);
    cum += prob[id];
    if (cum >= p) break;
  }
  return keep;
}
std::set<int32_t> ref_min_p(const std::vector<float>& l, double min_p) {
  const auto prob = softmax(l);
  const double pmax = *std::max_element(prob.begin(), prob.end());
  std::set<int32_t> keep;
  for (size_t i = 0; i < l.size(); ++i) {
    if (prob[i] >= min_p * pmax) keep.insert(static_cast<int32_t>(i));
  }
  return keep;
}
std::set<int32_t> ids_of(const std::vector<Candidate>& c) {
  std::set<int32_t> s;
  for (const Candidate& x : c) s.insert(x.id);
  return s;
}

TEST(Sampler, TopKTopPMinPMasksMatchReference) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    const auto l = random_logits(300, seed);
    for (int32_t k : {1, 5, 40, 299, 300, 1000}) {
      EXPECT_EQ(ids_of(sorted_candidates(l, k)), ref_top_k(l, k)) << "seed " << seed << " k " << k;
    }
    for (float p : {0.05f, 0.3f, 0.5f, 0.9f, 0.99f}) {
      auto c = sorted_candidates(l, 0);
      keep_top_p(c, p);
      EXPECT_EQ(ids_of(c), ref_top_p(l, p)) << "seed " << seed << " p " << p;
    }
    for (float m : {0.01f, 0.1f, 0.5f, 1.0f}) {
      auto c = sorted_candidates(l, 0);
      keep_min_p(c, m);
      EXPECT_EQ(ids_of(c), ref_min_p(l, m)) << "seed " << seed << " min_p " << m;
    }
  }
}

TEST(Sampler, FastTopPEqualsFullSort) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    for (float scale : {0.5f, 3.0f, 10.0f}) {
      const auto l = random_logits(5000, seed, scale);
      for (float p : {0.1f, 0.5f, 0.9f, 0.999f}) {
        auto full = sorted_candidates(l, 0);
        keep_top_p(full, p);
        const auto fast = top_p_candidates(l, p);
        ASSERT_EQ(fast.size(), full.size()) << "seed " << seed << " scale " << scale << " p " << p;
        for (size_t i = 0; i < fast.size(); ++i) EXPECT_EQ(fast[i].id, full[i].id);
      }
    }
  }
}

TEST(Sampler, DrawsOnlyInsideTheMask) {
  const auto l = random_logits(100, 7);
  SamplingParams p;
  p.temperature = 1.5f;
  p.top_k = 30;
  p.top_p = 0.8f;
  p.min_p = 0.05f;
  auto c = sorted_candidates(l, 30);
  keep_top_p(c, 0.8f);
  keep_min_p(c, 0.05f);
  const auto allowed = ids_of(c);
  Sampler s(p, -1, 99);
  std::set<int32_t> seen;
  for (int i = 0; i < 5000; ++i) {
    const int32_t id = s.sample(l, {}, {}).id;
    EXPECT_TRUE(allowed.count(id)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen, allowed);  // and every allowed token does come up

  // Without top_k/top_p the sampler takes its unsorted path; min_p must still mask exactly.
  SamplingParams q;
  q.temperature = 2.0f;
  q.min_p = 0.1f;
  const auto allowed_min_p = ref_min_p(l, 0.1);
  Sampler t(q, -1, 3);
  std::set<int32_t> seen_min_p;
  for (int i = 0; i < 5000; ++i) seen_min_p.insert(t.sample(l, {}, {}).id);
  EXPECT_EQ(seen_min_p, allowed_min_p);
}

double chi_square(const std::vector<int>& counts, const std::vector<double>& expected_p, int n) {
  double chi = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = expected_p[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

TEST(Sampler, TemperatureFrequenciesFollowSoftmax) {
  const std::vector<float> l = {1.0f, 0.5f, 0.0f, -0.5f, -1.0f, 2.0f};
  for (float t : {0.5f, 0.7f, 1.0f, 2.0f}) {
    SamplingParams p;
    p.temperature = t;
    Sampler s(p, -1, 2024);
    const int n = 60000;
    std::vector<int> counts(l.size(), 0);
    for (int i = 0; i < n; ++i) ++counts[s.sample(l, {}, {}).id];
    // df = 5: P(chi2 > 35.9) = 1e-6, so a correct sampler fails with negligible probability.
    EXPECT_LT(chi_square(counts, softmax(l, t), n), 35.9) << "temperature " << t;
    // The test has power: the same counts are far from the distribution of a different temperature.
    EXPECT_GT(chi_square(counts, softmax(l, t * 1.3), n), 100.0) << "temperature " << t;
  }
}

// Chi-square quantile for df degrees of freedom at upper tail ~1e-6 (Wilson-Hilferty, z = 4.75).
double chi2_limit(int df) {
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + 4.75 * std::sqrt(a), 3.0);
}

// The real model's next-token distribution after "Once upon a time" (llama2.c's logits): draws at
// temperature 2 follow softmax(logits / 2) (it is very peaked at 1), and top_p keeps exactly the
// reference nucleus.
TEST(Sampler, RealModelDistribution) {
  std::ifstream f(test::model_path("reference/stories260K_once_upon_a_time.step_logits.f32"), std::ios::binary);
  std::vector<float> l(512);
  f.read(reinterpret_cast<char*>(l.data()), static_cast<std::streamsize>(l.size() * sizeof(float)));
  ASSERT_TRUE(f) << "missing reference logits under " << test::models_dir();
  SamplingParams p;
  p.temperature = 2.0f;
  Sampler s(p, -1, 31337);
  const int n = 50000;
  std::vector<int> counts(l.size(), 0);
  for (int i = 0; i < n; ++i) ++counts[s.sample(l, {}, {}).id];
  const auto prob = softmax(l, 2.0);
  // Tokens expected at least 20 times are their own bin, the rest one bin.
  std::vector<int> binned;
  std::vector<double> expected;
  int rest = 0;
  double rest_p = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    if (prob[i] * n >= 20) {
      binned.push_back(counts[i]);
      expected.push_back(prob[i]);
    } else {
      rest += counts[i];
      rest_p += prob[i];
    }
  }
  binned.push_back(rest);
  expected.push_back(rest_p);
  ASSERT_GE(binned.size(), 50u);
  const int df = static_cast<int>(binned.size()) - 1;
  EXPECT_LT(chi_square(binned, expected, n), chi2_limit(df)) << df << " degrees of freedom";

  p.top_p = 0.99f;
  Sampler nucleus(p, -1, 4);
  const auto allowed = ref_top_p(l, 0.99);
  ASSERT_GT(allowed.size(), 1u);
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(allowed.count(nucleus.sample(l, {}, {}).id));
  p.temperature = 0;
  EXPECT_EQ(Sampler(p, -1, 0).sample(l, {}, {}).id, 432);  // the reference's first generated token
}

TEST(Sampler, TopKRenormalisesWithTemperature) {
  const std::vector<float> l = {3.0f, 2.5f, 2.0f, 0.0f, -1.0f, 1.0f};
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 3;
  Sampler s(p, -1, 5);
  const int n = 40000;
  std::vector<int> counts(3, 0);
  for (int i = 0; i < n; ++i) {
    const int32_t id = s.sample(l, {}, {}).id;
    ASSERT_LT(id, 3);
    ++counts[id];
  }
  EXPECT_LT(chi_square(counts, softmax({3.0f, 2.5f, 2.0f}, 0.8), n), 32.0);  // df 2, p 1e-7
}

TEST(Sampler, PenaltiesFollowLlamaCpp) {
  std::vector<float> l = {2.0f, -1.0f, 0.5f, 3.0f, 0.0f};
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.25f;
  p.frequency_penalty = 0.5f;
  p.penalty_last_n = 4;
  // Window = last 4: {1, 1, 2, 0}; token 3 is outside the window.
  const std::vector<int32_t> history = {3, 3, 1, 1, 2, 0};
  apply_penalties(l, history, p);
  EXPECT_FLOAT_EQ(l[0], 2.0f / 2 - 0.5f * 1 - 0.25f);
  EXPECT_FLOAT_EQ(l[1], -1.0f * 2 - 0.5f * 2 - 0.25f);
  EXPECT_FLOAT_EQ(l[2], 0.5f / 2 - 0.5f * 1 - 0.25f);
  EXPECT_FLOAT_EQ(l[3], 3.0f);
  EXPECT_FLOAT_EQ(l[4], 0.0f);

  std::vector<float> all = {2.0f, 2.0f};
  p.penalty_last_n = -1;  // whole history
  p.presence_penalty = p.frequency_penalty = 0;
  const std::vector<int32_t> h2 = {0, 1, 1};
  apply_penalties(all, h2, p);
  EXPECT_FLOAT_EQ(all[0], 1.0f);
  EXPECT_FLOAT_EQ(all[1], 1.0f);  // repetition is per distinct token, not per occurrence

  std::vector<float> off = {2.0f};
  p.penalty_last_n = 0;
  apply_penalties(off, h2, p);
  EXPECT_FLOAT_EQ(off[0], 2.0f);
}

TEST(Sampler, GreedyAppliesPenaltiesAndBias) {
  const std::vector<float> l = {1.0f, 3.0f, 2.9f};
  SamplingParams p;
  p.temperature = 0;
  EXPECT_EQ(Sampler(p, -1, 0).sample(l, {}, {}).id, 1);
  p.repetition_penalty = 1.5f;
  const std::vector<int32_t> hist = {1};
  EXPECT_EQ(Sampler(p, -1, 0).sample(l, hist, {}).id, 2);
  p.repetition_penalty = 1.0f;
  p.logit_bias = {{0, 5.0f}};
  EXPECT_EQ(Sampler(p, -1, 0).sample(l, {}, {}).id, 0);
  p.logit_bias = {{1, -INFINITY}};
  EXPECT_EQ(Sampler(p, -1, 0).sample(l, {}, {}).id, 2);
  const std::vector<int32_t> suppressed = {1, 2};
  p.logit_bias.clear();
  EXPECT_EQ(Sampler(p, -1, 0).sample(l, {}, suppressed).id, 0);
}

TEST(Sampler, GreedyTiesPickLowestIdAndNanIsNeverChosen) {
  SamplingParams p;
  p.temperature = 0;
  const std::vector<float> l = {0.0f, 5.0f, 5.0f, NAN};
  EXPECT_EQ(Sampler(p, -1, 0).sample(l, {}, {}).id, 1);
  const std::vector<float> n = {NAN, -1.0f};
  EXPECT_EQ(Sampler(p, -1, 0).sample(n, {}, {}).id, 1);
}

// The untruncated temperature draw (no top-k/top-p) as a candidate list does it: the maximum first,
// then the kept ids ascending, weights exp((l - max) / T) summed in that order, one uniform draw.
int32_t ref_untruncated_draw(const std::vector<float>& l, float temperature, float min_p, std::mt19937_64& rng) {
  const size_t max_id = static_cast<size_t>(std::max_element(l.begin(), l.end()) - l.begin());
  const double max_l = l[max_id];
  const double threshold = min_p > 0 ? max_l + std::log(static_cast<double>(min_p)) : -INFINITY;
  std::vector<size_t> order{max_id};
  for (size_t i = 0; i < l.size(); ++i) {
    if (i != max_id && l[i] != -INFINITY && static_cast<double>(l[i]) >= threshold) order.push_back(i);
  }
  std::vector<double> w;
  double total = 0;
  for (size_t i : order) total += w.emplace_back(std::exp(static_cast<float>((l[i] - max_l) * (1.0 / temperature))));
  const double u = uniform01(rng) * total;
  double cum = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    cum += w[k];
    if (u < cum) return static_cast<int32_t>(order[k]);
  }
  return static_cast<int32_t>(order.back());
}

TEST(Sampler, UntruncatedDrawEqualsTheCandidateListDraw) {
  // A seed keeps drawing the tokens it did before the draw stopped building a candidate list.
  for (const float min_p : {0.0f, 0.05f}) {
    // 0.02: most weights underflow to 0 (skipped by the draw, kept by a candidate list).
    for (const float temperature : {0.02f, 0.7f, 1.0f, 1.6f}) {
      SamplingParams p;
      p.temperature = temperature;
      p.min_p = min_p;
      Sampler s(p, -1, 1234);
      std::mt19937_64 ref_rng(1234);
      for (uint32_t i = 0; i < 300; ++i) {
        std::vector<float> l = random_logits(4000, i, 2.0f);
        for (size_t j = i % 7; j < l.size(); j += 97) l[j] = -INFINITY;  // masked ids (bias, grammar)
        if (i % 5 == 0) std::fill(l.begin() + 10, l.end(), -INFINITY);   // few ids left
        if (i % 3 == 0) {  // a tied maximum: the first is the front
          const size_t at = static_cast<size_t>(std::max_element(l.begin(), l.end()) - l.begin());
          l[(at + 1 + i) % 10] = l[at];
        }
        ASSERT_EQ(s.sample(l, {}, {}).id, ref_untruncated_draw(l, temperature, min_p, ref_rng))
            << "draw " << i << " T " << temperature << " min_p " << min_p;
      }
    }
  }
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferent) {
  SamplingParams p;
  p.temperature = 1.0f;
  auto run = [&](uint64_t seed) {
    Sampler s(p, -1, seed);
    std::vector<int32_t> out;
    for (uint32_t i = 0; i < 200; ++i) out.push_back(s.sample(random_logits(50, i, 1.0f), {}, {}).id);
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, LogprobsArePostBiasPreTemperatureLogSoftmax) {
  auto l = random_logits(40, 3);
  SamplingParams p;
  p.temperature = 0.5f;
  p.logit_bias = {{7, 2.0f}};
  Sampler s(p, 5, 11);
  const GeneratedToken t = s.sample(l, {}, {});
  std::vector<float> biased = l;
  biased[7] += 2.0f;
  const auto prob = softmax(biased);
  EXPECT_NEAR(t.logprob, std::log(prob[t.id]), 1e-5);
  ASSERT_EQ(t.top.size(), 5u);
  const auto top = ref_top_k(biased, 5);
  for (size_t i = 0; i < t.top.size(); ++i) {
    EXPECT_TRUE(top.count(t.top[i].id));
    EXPECT_NEAR(t.top[i].logprob, std::log(prob[t.top[i].id]), 1e-5);
    if (i > 0) {
      EXPECT_GE(t.top[i - 1].logprob, t.top[i].logprob);
    }
  }
  Sampler none(p, -1, 11);
  const GeneratedToken u = none.sample(l, {}, {});
  EXPECT_EQ(u.logprob, 0.0f);
  EXPECT_TRUE(u.top.empty());
}

TEST(Sampler, NeedsFullLogitsOnlyWhenSomethingUsesThem) {
  SamplingParams p;
  p.temperature = 0;
  EXPECT_FALSE(Sampler(p, -1, 0).needs_full_logits(false));
  EXPECT_TRUE(Sampler(p, -1, 0).needs_full_logits(true));
  EXPECT_TRUE(Sampler(p, 0, 0).needs_full_logits(false));
  p.repetition_penalty = 1.1f;
  EXPECT_TRUE(Sampler(p, -1, 0).needs_full_logits(false));
  p.repetition_penalty = 1.0f;
  p.temperature = 0.7f;
  EXPECT_TRUE(Sampler(p, -1, 0).needs_full_logits(false));
}

TEST(Sampler, Uniform01InRange) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10000; ++i) {
    const double u = uniform01(rng);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace vks::sched
