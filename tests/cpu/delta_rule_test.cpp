// ref::delta_rule (engine/cpu/delta_rule.h) at every level this CPU executes against the rule
// written out here, bit for bit: head sizes around the vector widths, a state carried over several
// tokens, decays and betas of every size.
#include "engine/cpu/delta_rule.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
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

TEST(DeltaRule, EveryLevelGivesThePlainRulesBits) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (size_t d : {1u, 7u, 16u, 33u, 128u}) {
    for (ref::AttendLevel level : {ref::AttendLevel::kBaseline, ref::AttendLevel::kAvx2, ref::AttendLevel::kAvx512}) {
      std::vector<float> want(d * d), got(d * d), update(d), o_want(d), o_got(d);
      for (float& s : want) s = dist(rng);
      got = want;
      for (int token = 0; token < 5; ++token) {
        std::vector<float> q(d), k(d), v(d);
        for (float& x : q) x = dist(rng);
        for (float& x : k) x = dist(rng);
        for (float& x : v) x = dist(rng);
        const float decay = token == 0 ? 1.0f : unit(rng), beta = unit(rng), scale = 0.125f;
        plain_rule(want, q.data(), k.data(), v.data(), decay, beta, scale, d, o_want.data());
        ref::delta_rule(got.data(), q.data(), k.data(), v.data(), decay, beta, scale, d, update.data(), o_got.data(),
                        level);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
            << "state, d " << d << " level " << ref::attend_level_name(level) << " token " << token;
        ASSERT_EQ(0, std::memcmp(o_got.data(), o_want.data(), o_got.size() * sizeof(float)))
            << "output, d " << d << " level " << ref::attend_level_name(level) << " token " << token;
      }
    }
  }
}

}  // namespace
}  // namespace vks
