#pragma once
// The loop of ref::attention, over key and value rows that a reader hands out as floats. The f32
// caches (reference_ops.cpp) hand out their rows in place; the Q8_0 cache (kv_q8.cpp) decodes a
// row into floats once per group of query heads that share it, then runs the same operations, so
// it gives exactly the bits of attention over its decoded values, at the f32 path's speed.
//
// A reader has, for the visible positions t in [0, n_ctx) of one call:
//   const float* key(size_t t, size_t kv_offset);    // the KV head's head_dim key floats
//   const float* value(size_t t, size_t kv_offset);  // likewise its values
// key(t, ...) is asked for every t before the first value(...); a key row must stay valid until the
// next call, a value row until kValueRows - 1 more calls.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "engine/cpu/reference_ops.h"

// Lanes values pass between always_inline functions only (never across a call), so the ABI of an
// AVX-sized vector argument, which GCC warns about in the baseline copy, never applies.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vks::ref::rows {

inline constexpr size_t kLanes = 8;      // dot()'s partial sums; element i goes to lane i % 8
inline constexpr size_t kMaxGroup = 64;  // query heads attended together (at most)
inline constexpr size_t kValueRows = 4;  // value rows added to a head's output per pass

// Eight floats as one value: element-wise IEEE operations, so the bits are those of the scalar
// loops over the same elements in the same order; the compiler keeps them in registers (an array
// of partial sums it spills on every iteration).
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));
[[gnu::always_inline]] inline Lanes load_lanes(const float* p) {
  Lanes v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void store_lanes(float* p, Lanes v) { __builtin_memcpy(p, &v, sizeof v); }

[[gnu::always_inline]] inline float combine_lanes(const float (&lane)[kLanes]) {
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

// ref::dot itself, inlined where attention takes one per cached position.
[[gnu::always_inline]] inline float dot_lanes(const float* a, const float* b, size_t n) {
  float lane[kLanes] = {};
  const size_t body = n - n % kLanes;
  for (size_t i = 0; i < body; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) lane[j] += a[i + j] * b[i + j];
  }
  float sum = combine_lanes(lane);
  for (size_t i = body; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// dot_lanes of four vectors a + u * a_stride with one b, each with dot_lanes's bits: their lanes
// advance together, so the four chains of additions overlap instead of waiting on each other (one
// dot's 8 lanes alone are bound by the latency of an addition).
[[gnu::always_inline]] inline void dot_lanes_x4(const float* a, size_t a_stride, const float* b, size_t n,
                                                float (&out)[4]) {
  Lanes l0{}, l1{}, l2{}, l3{};
  const size_t body = n - n % kLanes;
  for (size_t i = 0; i < body; i += kLanes) {
    const Lanes bv = load_lanes(b + i);
    l0 += load_lanes(a + i) * bv;
    l1 += load_lanes(a + a_stride + i) * bv;
    l2 += load_lanes(a + 2 * a_stride + i) * bv;
    l3 += load_lanes(a + 3 * a_stride + i) * bv;
  }
  const Lanes* lanes[4] = {&l0, &l1, &l2, &l3};
  for (size_t u = 0; u < 4; ++u) {
    float lane[kLanes];
    __builtin_memcpy(lane, lanes[u], sizeof lane);
    float sum = combine_lanes(lane);
    for (size_t i = body; i < n; ++i) sum += a[u * a_stride + i] * b[i];
    out[u] = sum;
  }
}

// out[d] += prob[u] * v[u][d] for u = 0..m-1 in turn, every d: the additions of m single-row passes
// in their order, with out read and written once instead of m times.
[[gnu::always_inline]] inline void add_weighted_rows(float* out, const float* prob, const float* const* v, size_t m,
                                                     size_t n) {
  const size_t body = n - n % kLanes;
  for (size_t d = 0; d < body; d += kLanes) {
    Lanes acc = load_lanes(out + d);
    for (size_t u = 0; u < m; ++u) acc += prob[u] * load_lanes(v[u] + d);
    store_lanes(out + d, acc);
  }
  for (size_t d = body; d < n; ++d) {
    for (size_t u = 0; u < m; ++u) out[d] += prob[u] * v[u][d];
  }
}

// Query heads [h0, h1) of one KV head (kv_offset into each row) over their visible positions: each
// head's scores, their softmax (with its sink), and its probability-weighted sum of the values. The
// heads share each row as it is read (a KV row is read once per group, not once per head); each
// head's operations and their order are those of a head computed alone. scores: [h1 - h0][n_ctx].
template <class Rows>
[[gnu::always_inline]] inline void attend_group_body(float* out, const float* q, Rows& rows, size_t kv_offset,
                                                     size_t n_ctx, const AttentionParams& p, size_t h0, size_t h1,
                                                     float* scores) {
  const size_t head_dim = p.head_dim, g = h1 - h0;
  for (size_t t = 0; t < n_ctx; ++t) {
    const float* kt = rows.key(t, kv_offset);
    size_t j = 0;
    for (; j + 4 <= g; j += 4) {
      float dots[4];
      dot_lanes_x4(q + (h0 + j) * head_dim, head_dim, kt, head_dim, dots);
      for (size_t u = 0; u < 4; ++u) scores[(j + u) * n_ctx + t] = attention_score(dots[u], p);
    }
    for (; j < g; ++j) scores[j * n_ctx + t] = attention_score(dot_lanes(q + (h0 + j) * head_dim, kt, head_dim), p);
  }
  float sums[kMaxGroup];
  for (size_t j = 0; j < g; ++j) {
    float* s = scores + j * n_ctx;
    const float* sink = p.sinks != nullptr ? &p.sinks[h0 + j] : nullptr;
    float max_score = sink != nullptr ? *sink : -INFINITY;
    for (size_t t = 0; t < n_ctx; ++t) max_score = std::max(max_score, s[t]);
    sums[j] = softmax_in_place(s, n_ctx, max_score, sink);
    std::fill(out + (h0 + j) * head_dim, out + (h0 + j + 1) * head_dim, 0.0f);
  }
  for (size_t t0 = 0; t0 < n_ctx; t0 += kValueRows) {
    const size_t m = std::min(kValueRows, n_ctx - t0);
    const float* vt[kValueRows];
    for (size_t u = 0; u < m; ++u) vt[u] = rows.value(t0 + u, kv_offset);
    for (size_t j = 0; j < g; ++j) {
      float prob[kValueRows];
      for (size_t u = 0; u < m; ++u) prob[u] = scores[j * n_ctx + t0 + u] / sums[j];
      add_weighted_rows(out + (h0 + j) * head_dim, prob, vt, m, head_dim);
    }
  }
}

// The same operations compiled twice: the vectorizer keeps their order (no reassociation, no
// multiply-add contraction: AVX2 without FMA), so both give the same bits; AVX2's loops are twice
// as wide. Attention is most of a decode step's arithmetic at long contexts. A reader's methods
// are inlined into each copy (mark them always_inline) and vectorized with it.
#if defined(__x86_64__)
template <class Rows>
[[gnu::target("avx2")]] void attend_group_avx2(float* out, const float* q, Rows& rows, size_t kv_offset, size_t n_ctx,
                                               const AttentionParams& p, size_t h0, size_t h1, float* scores) {
  attend_group_body(out, q, rows, kv_offset, n_ctx, p, h0, h1, scores);
}
#endif
template <class Rows>
void attend_group_baseline(float* out, const float* q, Rows& rows, size_t kv_offset, size_t n_ctx,
                           const AttentionParams& p, size_t h0, size_t h1, float* scores) {
  attend_group_body(out, q, rows, kv_offset, n_ctx, p, h0, h1, scores);
}

inline bool attend_with_avx2() {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

// ref::attention's heads [p.head_begin, p.heads_end()) over n_ctx positions read through rows, one
// KV head's share of them at a time.
template <class Rows>
void attend(float* out, const float* q, size_t n_ctx, const AttentionParams& p, Rows& rows) {
  const size_t head_dim = p.head_dim;
  const size_t group = p.n_heads / p.n_kv_heads;  // query heads sharing one KV head
  thread_local std::vector<float> scores;         // per thread: no allocation per call at long contexts
  if (scores.size() < std::min(group, kMaxGroup) * n_ctx) scores.resize(std::min(group, kMaxGroup) * n_ctx);
  auto* fn = &attend_group_baseline<Rows>;
#if defined(__x86_64__)
  if (attend_with_avx2()) fn = &attend_group_avx2<Rows>;
#endif
  for (size_t h0 = p.head_begin; h0 < p.heads_end();) {
    const size_t kv = h0 / group;
    const size_t h1 = std::min({p.heads_end(), (kv + 1) * group, h0 + kMaxGroup});
    fn(out, q, rows, kv * head_dim, n_ctx, p, h0, h1, scores.data());
    h0 = h1;
  }
}

}  // namespace vks::ref::rows

#pragma GCC diagnostic pop
