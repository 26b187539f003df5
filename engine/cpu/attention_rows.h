#pragma once
// The loop of ref::attention, over key and value rows that a reader hands out as floats. The f32
// caches (reference_ops.cpp) hand out their rows in place; the quantized caches (kv_quant.cpp) decode a
// row into floats once per group of query heads that share it, then runs the same operations, so
// it gives exactly the bits of attention over its decoded values, at the f32 path's speed.
//
// A reader has, for the visible positions t in [0, n_ctx) of one call:
//   const float* key(size_t t, size_t kv_offset);    // the KV head's head_dim key floats
//   const float* value(size_t t, size_t kv_offset);  // likewise its values
//   void prefetch(size_t t, size_t kv_offset);       // a hint: t's rows are read soon (t < n_ctx)
//   size_t head_step;                                // kv_offset of KV head h: h * head_step
// key(t, ...) is asked for every t before the first value(...); a key row must stay valid until the
// call after next (the avx512f copy reads positions t and t + 1 together), a value row until
// kValueRows - 1 more calls.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "engine/cpu/attention_lanes.h"
#include "engine/cpu/attention_level.h"
#include "engine/cpu/attention_rows_avx512.h"
#include "engine/cpu/exp_lanes.h"
#include "engine/cpu/reference_ops.h"

// Lanes values pass between always_inline functions only (never across a call), so the ABI of an
// AVX-sized vector argument, which GCC warns about in the baseline copy, never applies.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vks::ref::rows {

inline constexpr size_t kMaxGroup = 64;  // query heads attended together (at most)
inline constexpr size_t kValueRows = 4;  // value rows added to a head's output per pass
// Positions between the key row being read and the rows asked for by prefetch(): a cache's rows are
// scattered over its blocks, a stride the hardware prefetcher does not follow.
inline constexpr size_t kPrefetchAhead = 8;

// Asks for the cache lines of bytes [p, p + n) to be fetched, into L1 (locality 3) or L2 (2).
template <int kLocality>
[[gnu::always_inline]] inline void prefetch_bytes(const void* p, size_t n) {
  for (size_t at = 0; at < n; at += 64) __builtin_prefetch(static_cast<const char*>(p) + at, 0, kLocality);
}

// A head's maximum score, std::max(...std::max(std::max(init, s[0]), s[1])..., s[n - 1]), eight
// lanes at a time (one chain of comparisons held every score up). The same value: a maximum rounds
// nothing, and a NaN score is passed over in every lane as in one (m < NaN is false; a NaN init
// stays). Only which of +0 and -0 wins may differ, and neither s - max nor sink - max tells them
// apart (x - 0 == x - -0 but for x = -0, and exp(-0) == exp(+0)).
[[gnu::always_inline]] inline float max_score_of(const float* s, size_t n, float init) {
  Lanes m;
  for (size_t j = 0; j < kLanes; ++j) m[j] = init;
  size_t t = 0;
  for (; t + kLanes <= n; t += kLanes) {
    const Lanes x = load_lanes(s + t);
    m = m < x ? x : m;
  }
  float max = init;
  for (size_t j = 0; j < kLanes; ++j) max = std::max(max, m[j]);
  for (; t < n; ++t) max = std::max(max, s[t]);
  return max;
}

// Eight exponentials, four at a time at kBaseline. A function, not a lambda: GCC compiles a lambda
// for the file's target, not its caller's, and a Lanes argument passed to it out of line (as at -Og)
// arrived garbled under the AVX ABI mismatch (-Wpsabi, silenced above).
template <AttendLevel kLevel>
[[gnu::always_inline]] inline Lanes exp8(Lanes x) {
  if constexpr (kLevel == AttendLevel::kBaseline) {
    const Lanes4 lo = exp_lanes(Lanes4{x[0], x[1], x[2], x[3]}), hi = exp_lanes(Lanes4{x[4], x[5], x[6], x[7]});
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
  } else {
    return exp_lanes(x);
  }
}

// A head's softmax in place: s[t] = exp(s[t] - max_score) / sum (exp_lanes), the sum over every
// t's exp in eight lanes (t in lane t % 8, combined by combine_lanes, then the n % 8 tail in order)
// plus the sink's exp(sink - max_score) where there is one (a sink weighs in the denominator only).
// At kAvx512 16 floats per register, each half added to the lanes in turn (the same additions); at
// kBaseline the exponentials four at a time (exp_lanes.h: a vector no wider than the registers).
template <AttendLevel kLevel>
[[gnu::always_inline]] inline void softmax_lanes(float* s, size_t n, float max_score, const float* sink) {
  constexpr bool kWide = kLevel == AttendLevel::kAvx512;
  const size_t body = n - n % kLanes;
  Lanes sum{};
  size_t t = 0;
  if constexpr (kWide) {
    for (; t + 2 * kLanes <= body; t += 2 * kLanes) {
      const Lanes16 e = exp_lanes(load_lanes16(s + t) - max_score);
      store_lanes16(s + t, e);
      sum += __builtin_shufflevector(e, e, 0, 1, 2, 3, 4, 5, 6, 7);
      sum += __builtin_shufflevector(e, e, 8, 9, 10, 11, 12, 13, 14, 15);
    }
  }
  for (; t < body; t += kLanes) {
    const Lanes e = exp8<kLevel>(load_lanes(s + t) - max_score);
    store_lanes(s + t, e);
    sum += e;
  }
  float lane[kLanes];
  __builtin_memcpy(lane, &sum, sizeof lane);
  float total = combine_lanes(lane);
  for (; t < n; ++t) total += (s[t] = exp_lanes(s[t] - max_score));
  if (sink != nullptr) total += exp_lanes(*sink - max_score);
  // Division rounds each quotient alone: a vector of them has the scalar loop's bits.
  t = 0;
  if constexpr (kWide) {
    for (; t + 2 * kLanes <= n; t += 2 * kLanes) store_lanes16(s + t, load_lanes16(s + t) / total);
  }
  for (; t + kLanes <= n; t += kLanes) store_lanes(s + t, load_lanes(s + t) / total);
  for (; t < n; ++t) s[t] = s[t] / total;
}

// Each query head's score at every position: dot_lanes's bits, several heads per key row read.
template <class Rows>
[[gnu::always_inline]] inline void scores_lanes(const float* q, Rows& rows, size_t kv_offset, size_t n_ctx,
                                                const AttentionParams& p, size_t h0, size_t g, float* scores) {
  const size_t head_dim = p.head_dim;
  for (size_t t = 0; t < n_ctx; ++t) {
    if (t + kPrefetchAhead < n_ctx) rows.prefetch(t + kPrefetchAhead, kv_offset);
    const float* kt = rows.key(t, kv_offset);
    size_t j = 0;
    for (; j + 4 <= g; j += 4) {
      float dots[4];
      dot_lanes_x4(q + (h0 + j) * head_dim, head_dim, kt, head_dim, dots);
      for (size_t u = 0; u < 4; ++u) scores[(j + u) * n_ctx + t] = attention_score(dots[u], p);
    }
    for (; j < g; ++j) scores[j * n_ctx + t] = attention_score(dot_lanes(q + (h0 + j) * head_dim, kt, head_dim), p);
  }
}

// The same scores two positions per register (attention_rows_avx512.h). q2: room for g heads'
// duplicate_steps.
template <class Rows>
[[gnu::always_inline]] inline void scores_pairs(const float* q, Rows& rows, size_t kv_offset, size_t n_ctx,
                                                const AttentionParams& p, size_t h0, size_t g, float* scores,
                                                float* q2) {
  const size_t head_dim = p.head_dim, body = head_dim - head_dim % kLanes;
  duplicate_steps(q + h0 * head_dim, g, head_dim, q2);
  for (size_t t = 0; t < n_ctx; t += 2) {
    const bool pair = t + 1 < n_ctx;
    if (t + kPrefetchAhead + 1 < n_ctx) {
      rows.prefetch(t + kPrefetchAhead, kv_offset);
      rows.prefetch(t + kPrefetchAhead + 1, kv_offset);
    }
    const float* k0 = rows.key(t, kv_offset);
    const float* k1 = pair ? rows.key(t + 1, kv_offset) : k0;  // a lone last position: its row twice
    auto heads = [&]<size_t H>(size_t j) {
      float dots[H][2];
      dot_pairs<H>(q2 + 2 * j * body, q + (h0 + j) * head_dim, k0, k1, head_dim, dots);
      for (size_t u = 0; u < H; ++u) {
        scores[(j + u) * n_ctx + t] = attention_score(dots[u][0], p);
        if (pair) scores[(j + u) * n_ctx + t + 1] = attention_score(dots[u][1], p);
      }
    };
    size_t j = 0;
    for (; j + 8 <= g; j += 8) heads.template operator()<8>(j);
    for (; j + 4 <= g; j += 4) heads.template operator()<4>(j);
    for (; j < g; ++j) heads.template operator()<1>(j);
  }
}

// Query heads [h0, h1) of one KV head (kv_offset into each row) over their visible positions: each
// head's scores, their softmax (with its sink), and its probability-weighted sum of the values. The
// heads share each row as it is read (a KV row is read once per group, not once per head); each
// head's operations and their order are those of a head computed alone. scratch: [h1 - h0][n_ctx +
// 2 * head_dim], the scores first. At kAvx512 16 floats per register, the same bits.
template <AttendLevel kLevel, class Rows>
[[gnu::always_inline]] inline void attend_group_body(float* out, const float* q, Rows& rows, size_t kv_offset,
                                                     size_t n_ctx, const AttentionParams& p, size_t h0, size_t h1,
                                                     float* scratch) {
  constexpr bool kWide = kLevel == AttendLevel::kAvx512;
  const size_t head_dim = p.head_dim, g = h1 - h0;
  float* scores = scratch;
  if constexpr (kWide) {
    scores_pairs(q, rows, kv_offset, n_ctx, p, h0, g, scores, scratch + g * n_ctx);
  } else {
    scores_lanes(q, rows, kv_offset, n_ctx, p, h0, g, scores);
  }
  for (size_t j = 0; j < g; ++j) {
    float* s = scores + j * n_ctx;
    const float* sink = p.sinks != nullptr ? &p.sinks[h0 + j] : nullptr;
    const float max_score = max_score_of(s, n_ctx, sink != nullptr ? *sink : -INFINITY);
    softmax_lanes<kLevel>(s, n_ctx, max_score, sink);  // the scores become probabilities
    std::fill(out + (h0 + j) * head_dim, out + (h0 + j + 1) * head_dim, 0.0f);
  }
  for (size_t t0 = 0; t0 < n_ctx; t0 += kValueRows) {
    const size_t m = std::min(kValueRows, n_ctx - t0);
    const float* vt[kValueRows];
    for (size_t u = 0; u < m; ++u) vt[u] = rows.value(t0 + u, kv_offset);
    for (size_t j = 0; j < g; ++j) {
      const float* prob = scores + j * n_ctx + t0;
      if constexpr (kWide) {
        add_weighted_rows_x16(out + (h0 + j) * head_dim, prob, vt, m, head_dim);
      } else {
        add_weighted_rows(out + (h0 + j) * head_dim, prob, vt, m, head_dim);
      }
    }
  }
}

// The same operations compiled three times: the vectorizer keeps their order (no reassociation,
// no multiply-add contraction: AVX2 without FMA; the avx512f copy's includers compile with
// -ffp-contract=off), so all give the same bits; AVX2's loops are twice as wide as the baseline's,
// AVX-512's twice AVX2's. Attention is most of a decode step's arithmetic at long contexts. A
// reader's methods are inlined into each copy (mark them always_inline) and vectorized with it.
#if defined(__x86_64__)
template <class Rows>
[[gnu::target("avx512f")]] void attend_group_avx512(float* out, const float* q, Rows& rows, size_t kv_offset,
                                                    size_t n_ctx, const AttentionParams& p, size_t h0, size_t h1,
                                                    float* scratch) {
  attend_group_body<AttendLevel::kAvx512>(out, q, rows, kv_offset, n_ctx, p, h0, h1, scratch);
}
template <class Rows>
[[gnu::target("avx2")]] void attend_group_avx2(float* out, const float* q, Rows& rows, size_t kv_offset, size_t n_ctx,
                                               const AttentionParams& p, size_t h0, size_t h1, float* scratch) {
  attend_group_body<AttendLevel::kAvx2>(out, q, rows, kv_offset, n_ctx, p, h0, h1, scratch);
}
#endif
template <class Rows>
void attend_group_baseline(float* out, const float* q, Rows& rows, size_t kv_offset, size_t n_ctx,
                           const AttentionParams& p, size_t h0, size_t h1, float* scratch) {
  attend_group_body<AttendLevel::kBaseline>(out, q, rows, kv_offset, n_ctx, p, h0, h1, scratch);
}

// ref::attention's heads [p.head_begin, p.heads_end()) over n_ctx positions read through rows, one
// KV head's share of them at a time, at `level` (lowered to the highest this CPU executes).
template <class Rows>
void attend(float* out, const float* q, size_t n_ctx, const AttentionParams& p, Rows& rows, AttendLevel level) {
  const size_t head_dim = p.head_dim;
  const size_t group = p.n_heads / p.n_kv_heads;  // query heads sharing one KV head
  thread_local std::vector<float> scratch;        // per thread: no allocation per call at long contexts
  const size_t scratch_size = std::min(group, kMaxGroup) * (n_ctx + 2 * head_dim);
  if (scratch.size() < scratch_size) scratch.resize(scratch_size);
  auto* fn = &attend_group_baseline<Rows>;
#if defined(__x86_64__)
  switch (std::min(level, fastest_attend_level())) {
    case AttendLevel::kAvx512: fn = &attend_group_avx512<Rows>; break;
    case AttendLevel::kAvx2: fn = &attend_group_avx2<Rows>; break;
    case AttendLevel::kBaseline: break;
  }
#else
  (void)level;
#endif
  for (size_t h0 = p.head_begin; h0 < p.heads_end();) {
    const size_t kv = h0 / group;
    const size_t h1 = std::min({p.heads_end(), (kv + 1) * group, h0 + kMaxGroup});
    fn(out, q, rows, kv * rows.head_step, n_ctx, p, h0, h1, scratch.data());
    h0 = h1;
  }
}

}  // namespace vks::ref::rows

#pragma GCC diagnostic pop
