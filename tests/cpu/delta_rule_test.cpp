// ref::delta_rule (engine/cpu/delta_rule.h) at every level this CPU executes against the rule
// written out here, bit for bit: head sizes around the vector widths, a state carried over several
// tokens, decays and betas of every size.
#include "engine/cpu/delta_rule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace vks {
namespace {

// S = decay S; u = beta (v - S^T k); S += k ⊗ u; o = scale S^T q, each element's operations in
// delta_rule.h's order.
void plain_rule(std::vector<float>& S, const float* q, const float* k, const float* v, float decay, float beta,
                float scale, size_t d, float* o) {
  std::vector<float> u(d, 0.0f);
  for (size_t i = 0; i < d; ++i) {
    for (size_t c = 0; c < d; ++c) {
      S[i * d + c] = S[i * d + c] * decay;
      u[c] = u[c] + S[i * d + c] * k[i];
    }
  }
  for (size_t c = 0; c < d; ++c) u[c] = beta * (v[c] - u[c]);
  for (size_t c = 0; c < d; ++c) o[c] = 0.0f;
  for (size_t i = 0; i < d; ++i) {
    for (size_t c = 0; c < d; ++c) {
      S[i * d + c] = S[i * d + c] + k[i] * u[c];
      o[c] = o[c] + S[i * d + c] * q[i];
    }
  }
  for (size_t c = 0; c < d; ++c) o[c] = o[c] * scale;
}

// Token t of a sequence: q, k and v interleaved as the mixer's rows are ([q | k | v] per token, a
// stride of 3 d + 1 so that no row starts aligned), decay and beta every other float.
struct Sequence {
  size_t d = 0, n = 0;
  std::vector<float> qkv, gates, out;
  size_t stride() const { return 3 * d + 1; }
  ref::DeltaRuleTokens run(size_t first, size_t count) {
    ref::DeltaRuleTokens x;
    x.q = &qkv[first * stride()];
    x.k = x.q + d;
    x.v = x.k + d;
    x.qkv_stride = stride();
    x.decay = &gates[first * 2];
    x.beta = x.decay + 1;
    x.gate_stride = 2;
    x.o = &out[first * d];
    x.o_stride = d;
    x.n = count;
    return x;
  }
};

Sequence random_sequence(std::mt19937& rng, size_t d, size_t n) {
  std::normal_distribution<float> dist;
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  Sequence s;
  s.d = d;
  s.n = n;
  s.qkv.resize(n * s.stride());
  for (float& x : s.qkv) x = dist(rng);
  s.gates.resize(2 * n);
  for (size_t t = 0; t < n; ++t) {
    s.gates[2 * t] = t == 0 ? 1.0f : unit(rng);  // decay
    s.gates[2 * t + 1] = unit(rng);              // beta
  }
  s.out.assign(n * d, 0.0f);
  return s;
}

// Every level, every split of a sequence into runs (one token a call as decode makes them, the whole
// prompt at once, and uneven pieces), head sizes around each level's vector and block widths: the
// state after each run and every token's output have the bits of the rule written out.
TEST(DeltaRule, EveryLevelAndRunGivesThePlainRulesBits) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  const std::vector<std::vector<size_t>> splits{{1, 1, 1, 1, 1, 1, 1}, {7}, {2, 4, 1}, {3, 3, 1}};
  for (size_t d : {1u, 7u, 16u, 33u, 64u, 80u, 128u}) {
    Sequence want = random_sequence(rng, d, 7);
    std::vector<float> start(d * d);
    for (float& s : start) s = dist(rng);
    std::vector<float> S_want = start;
    for (size_t t = 0; t < want.n; ++t) {
      const ref::DeltaRuleTokens x = want.run(t, 1);
      plain_rule(S_want, x.q, x.k, x.v, x.decay[0], x.beta[0], 0.125f, d, x.o);
    }
    for (ref::AttendLevel level : {ref::AttendLevel::kBaseline, ref::AttendLevel::kAvx2, ref::AttendLevel::kAvx512}) {
      for (const std::vector<size_t>& split : splits) {
        Sequence got = want;
        std::fill(got.out.begin(), got.out.end(), -1.0f);
        std::vector<float> S_got = start;
        size_t first = 0;
        for (size_t count : split) {
          ref::delta_rule(S_got.data(), got.run(first, count), 0.125f, d, level);
          first += count;
        }
        const std::string where = "d " + std::to_string(d) + " level " + ref::attend_level_name(level) +
                                  " runs of " + std::to_string(split[0]) + ", " + std::to_string(split.back());
        ASSERT_EQ(0, std::memcmp(S_got.data(), S_want.data(), S_got.size() * sizeof(float))) << "state, " << where;
        ASSERT_EQ(0, std::memcmp(got.out.data(), want.out.data(), got.out.size() * sizeof(float))) << "outputs, " << where;
      }
    }
  }
}

// A run of no tokens leaves the state and the outputs alone.
TEST(DeltaRule, AnEmptyRunChangesNothing) {
  std::mt19937 rng(9);
  Sequence s = random_sequence(rng, 16, 1);
  std::vector<float> S(16 * 16, 0.5f);
  const std::vector<float> before = S;
  ref::delta_rule(S.data(), s.run(0, 0), 0.125f, 16);
  EXPECT_EQ(S, before);
  EXPECT_EQ(s.out, std::vector<float>(16, 0.0f));
}

}  // namespace
}  // namespace vks
