#include "engine/cpu/delta_rule.h"

#include <algorithm>

namespace vks::ref {
namespace {

// The rule as delta_rule.h writes it; GCC vectorizes the loops over c at the level's width.
[[gnu::always_inline]] inline void rule(float* __restrict S, const float* __restrict q, const float* __restrict k,
                                        const float* __restrict v, float decay, float beta, float scale, size_t d,
                                        float* __restrict update, float* __restrict o) {
  std::fill_n(update, d, 0.0f);
  for (size_t i = 0; i < d; ++i) {
    float* __restrict row = S + i * d;
    const float ki = k[i];
    for (size_t c = 0; c < d; ++c) {
      row[c] = row[c] * decay;
      update[c] = update[c] + row[c] * ki;
    }
  }
  for (size_t c = 0; c < d; ++c) update[c] = beta * (v[c] - update[c]);
  std::fill_n(o, d, 0.0f);
  for (size_t i = 0; i < d; ++i) {
    float* __restrict row = S + i * d;
    const float ki = k[i], qi = q[i];
    for (size_t c = 0; c < d; ++c) {
      row[c] = row[c] + ki * update[c];
      o[c] = o[c] + row[c] * qi;
    }
  }
  for (size_t c = 0; c < d; ++c) o[c] = o[c] * scale;
}

void rule_baseline(float* S, const float* q, const float* k, const float* v, float decay, float beta, float scale,
                   size_t d, float* update, float* o) {
  rule(S, q, k, v, decay, beta, scale, d, update, o);
}
#if defined(__x86_64__)
[[gnu::target("avx2")]] void rule_avx2(float* S, const float* q, const float* k, const float* v, float decay,
                                       float beta, float scale, size_t d, float* update, float* o) {
  rule(S, q, k, v, decay, beta, scale, d, update, o);
}
[[gnu::target("avx512f")]] void rule_avx512(float* S, const float* q, const float* k, const float* v, float decay,
                                            float beta, float scale, size_t d, float* update, float* o) {
  rule(S, q, k, v, decay, beta, scale, d, update, o);
}
#endif

}  // namespace

void delta_rule(float* S, const float* q, const float* k, const float* v, float decay, float beta, float scale,
                size_t d, float* update, float* o, AttendLevel level) {
  level = std::min(level, fastest_attend_level());
#if defined(__x86_64__)
  switch (level) {
    case AttendLevel::kAvx512: return rule_avx512(S, q, k, v, decay, beta, scale, d, update, o);
    case AttendLevel::kAvx2: return rule_avx2(S, q, k, v, decay, beta, scale, d, update, o);
    case AttendLevel::kBaseline: break;
  }
#endif
  rule_baseline(S, q, k, v, decay, beta, scale, d, update, o);
}

}  // namespace vks::ref
