#include "engine/cpu/delta_rule.h"

#include <algorithm>
#include <cstring>

#include "engine/cpu/attention_rows_avx512.h"  // rows::Lanes4, Lanes, Lanes16

namespace vks::ref {
namespace {

// The CPU backend's vector types (attention_lanes.h): element-wise IEEE multiplies and adds (never
// fused: -ffp-contract=off), at the width of the function they are inlined into.
using rows::Lanes;
using rows::Lanes16;
using rows::Lanes4;

template <class V>
constexpr size_t kLanes = sizeof(V) / sizeof(float);

template <class V>
[[gnu::always_inline]] inline V load(const float* p) {
  V r;
  std::memcpy(&r, p, sizeof r);
  return r;
}
template <class V>
[[gnu::always_inline]] inline void store(float* p, V x) {
  std::memcpy(p, &x, sizeof x);
}

// One token's pass over columns [c0, c0 + N * kLanes<V>) of S (delta_rule.h's order).
template <class V, size_t N, bool kNext>
[[gnu::always_inline]] inline void pass(float* __restrict S, size_t d, size_t c0, float decay, const float* k,
                                        const float* q, const V* u, V* o, float next_decay, const float* next_k,
                                        V* next) {
  constexpr size_t W = kLanes<V>;
  for (size_t i = 0; i < d; ++i) {
    float* row = S + i * d + c0;
    const float ki = k[i], qi = q[i];
    for (size_t b = 0; b < N; ++b) {
      const V s = load<V>(row + b * W) * decay + ki * u[b];
      store(row + b * W, s);
      o[b] = o[b] + s * qi;
      if constexpr (kNext) next[b] = next[b] + (s * next_decay) * next_k[i];
    }
  }
}

// Columns [c0, c0 + N * kLanes<V>) of S through every token of the run (delta_rule.h's order;
// V = float: one column).
template <class V, size_t N>
[[gnu::always_inline]] inline void columns(float* __restrict S, const DeltaRuleTokens& x, float scale, size_t d,
                                           size_t c0) {
  constexpr size_t W = kLanes<V>;
  V u[N], o[N], next[N];
  // Token 0's u starts as S^T k of the decayed state: a pass that only reads.
  for (size_t b = 0; b < N; ++b) u[b] = V{};
  {
    const float decay = x.decay[0];
    for (size_t i = 0; i < d; ++i) {
      const float* row = S + i * d + c0;
      const float ki = x.k[i];
      for (size_t b = 0; b < N; ++b) u[b] = u[b] + (load<V>(row + b * W) * decay) * ki;
    }
  }
  for (size_t t = 0; t < x.n; ++t) {
    const float* q = x.q + t * x.qkv_stride;
    const float* k = x.k + t * x.qkv_stride;
    const float* v = x.v + t * x.qkv_stride;
    const float decay = x.decay[t * x.gate_stride];
    const float beta = x.beta[t * x.gate_stride];
    for (size_t b = 0; b < N; ++b) {
      u[b] = beta * (load<V>(v + c0 + b * W) - u[b]);
      o[b] = V{};
      next[b] = V{};
    }
    // One pass: S = decay S + k ⊗ u, o = S^T q, and (but for the last token) the next token's S^T k
    // of S decayed by its decay.
    if (t + 1 < x.n) {
      pass<V, N, true>(S, d, c0, decay, k, q, u, o, x.decay[(t + 1) * x.gate_stride], k + x.qkv_stride, next);
    } else {
      pass<V, N, false>(S, d, c0, decay, k, q, u, o, 0.0f, k, next);
    }
    float* out = x.o + t * x.o_stride + c0;
    for (size_t b = 0; b < N; ++b) {
      store(out + b * W, o[b] * scale);
      u[b] = next[b];
    }
  }
}

// Blocks of kVectors vectors of V across the columns, then blocks of one, then single columns. A
// block's u, o and next take 3 kVectors registers: AVX2 has 16 (2 a block measured fastest), AVX-512
// and NEON 32; SSE2's 16 spill at 4 but ran as fast as at 2 (vks_bench_delta_rule).
template <class V, size_t kVectors>
[[gnu::always_inline]] inline void rule(float* S, const DeltaRuleTokens& x, float scale, size_t d) {
  if (x.n == 0) return;
  constexpr size_t kBlock = kVectors * kLanes<V>;
  size_t c = 0;
  for (; c + kBlock <= d; c += kBlock) columns<V, kVectors>(S, x, scale, d, c);
  for (; c + kLanes<V> <= d; c += kLanes<V>) columns<V, 1>(S, x, scale, d, c);
  for (; c < d; ++c) columns<float, 1>(S, x, scale, d, c);
}

void rule_baseline(float* S, const DeltaRuleTokens& x, float scale, size_t d) { rule<Lanes4, 4>(S, x, scale, d); }
#if defined(__x86_64__)
[[gnu::target("avx2")]] void rule_avx2(float* S, const DeltaRuleTokens& x, float scale, size_t d) {
  rule<Lanes, 2>(S, x, scale, d);
}
[[gnu::target("avx512f")]] void rule_avx512(float* S, const DeltaRuleTokens& x, float scale, size_t d) {
  rule<Lanes16, 4>(S, x, scale, d);
}
#endif

}  // namespace

void delta_rule(float* S, const DeltaRuleTokens& tokens, float scale, size_t d, AttendLevel level) {
  level = std::min(level, fastest_attend_level());
#if defined(__x86_64__)
  switch (level) {
    case AttendLevel::kAvx512: return rule_avx512(S, tokens, scale, d);
    case AttendLevel::kAvx2: return rule_avx2(S, tokens, scale, d);
    case AttendLevel::kBaseline: break;
  }
#endif
  rule_baseline(S, tokens, scale, d);
}

}  // namespace vks::ref
