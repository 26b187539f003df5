#pragma once
// attention_rows.h's scores and value sums 16 floats per register, with the bits of the 8-lane
// operations (attention_lanes.h):
// - scores: a register holds two key positions' lanes (lanes 0-7 position t, 8-15 position t + 1)
//   times the query head's eight elements twice, so each position's eight lanes are dot_lanes's;
//   combine_lanes's additions then run in shuffles, four registers at a time;
// - values: add_weighted_rows is element-wise, so 16 elements at a time add the same products in
//   the same order.
// Only the avx512f copy in attention_rows.h inlines these. AVX-512 has FMA, and a multiply-add
// contracted into one rounds once where these operations round twice: the files that include
// attention_rows.h compile with -ffp-contract=off (as all of ours: the top-level CMakeLists.txt).
#include <algorithm>
#include <cstddef>

#include "engine/cpu/attention_lanes.h"

// As in attention_lanes.h: the 16-float values pass between always_inline functions only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vks::ref::rows {

using Lanes16 = float __attribute__((vector_size(16 * sizeof(float))));
[[gnu::always_inline]] inline Lanes16 load_lanes16(const float* p) {
  Lanes16 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void store_lanes16(float* p, Lanes16 v) { __builtin_memcpy(p, &v, sizeof v); }

// a's eight floats in lanes 0-7, b's in lanes 8-15.
[[gnu::always_inline]] inline Lanes16 load_pair(const float* a, const float* b) {
  return __builtin_shufflevector(load_lanes(a), load_lanes(b), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// combine_lanes of both halves of four registers a, b, c, d (eight sums), the same additions:
// ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)). Register u's half s lands in lane
// pair_lane(u, s).
[[gnu::always_inline]] inline constexpr size_t pair_lane(size_t u, size_t s) {
  return (u % 2) * 8 + s * 4 + (u / 2) * 2;
}
[[gnu::always_inline]] inline Lanes16 combine_pairs_x4(Lanes16 a, Lanes16 b, Lanes16 c, Lanes16 d) {
  // A register's quarters are [t: l0-l3 | t: l4-l7 | t+1: l0-l3 | t+1: l4-l7]; x_i = l_i + l_(i+4)
  // gives quarters [a t | a t+1 | b t | b t+1] of (x0, x1, x2, x3), likewise for c and d.
  const Lanes16 ab = __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
                     __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  const Lanes16 cd = __builtin_shufflevector(c, d, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
                     __builtin_shufflevector(c, d, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  // Per quarter: [ab's x0 + x1, ab's x2 + x3, cd's x0 + x1, cd's x2 + x3].
  const Lanes16 s = __builtin_shufflevector(ab, cd, 0, 2, 16, 18, 4, 6, 20, 22, 8, 10, 24, 26, 12, 14, 28, 30) +
                    __builtin_shufflevector(ab, cd, 1, 3, 17, 19, 5, 7, 21, 23, 9, 11, 25, 27, 13, 15, 29, 31);
  return s + __builtin_shufflevector(s, s, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
}

// Each of g query heads' (q: [g][n]) eight-element steps twice in a row, as dot_pairs reads them
// (q2: [g][2 * (n - n % 8)]): one load per register instead of a load and a shuffle.
[[gnu::always_inline]] inline void duplicate_steps(const float* q, size_t g, size_t n, float* q2) {
  const size_t body = n - n % kLanes;
  for (size_t j = 0; j < g; ++j) {
    for (size_t i = 0; i < body; i += kLanes) {
      store_lanes(q2 + 2 * (j * body + i), load_lanes(q + j * n + i));
      store_lanes(q2 + 2 * (j * body + i) + kLanes, load_lanes(q + j * n + i));
    }
  }
}

// dot_lanes(q + u * n, k_s, n) for the H query heads u (1, 4 or 8) and two key rows k_0, k_1 (the
// same row twice for a lone position); q2: those heads' duplicate_steps. H registers' additions
// advance together.
template <size_t H>
[[gnu::always_inline]] inline void dot_pairs(const float* q2, const float* q, const float* k0, const float* k1,
                                             size_t n, float (&out)[H][2]) {
  static_assert(H == 1 || H % 4 == 0);
  Lanes16 acc[H] = {};
  const size_t body = n - n % kLanes;
  for (size_t i = 0; i < body; i += kLanes) {
    const Lanes16 k = load_pair(k0 + i, k1 + i);
    for (size_t u = 0; u < H; ++u) acc[u] += load_lanes16(q2 + 2 * (u * body + i)) * k;
  }
  for (size_t u0 = 0; u0 < H; u0 += 4) {
    // One head: itself four times. Indexed here, not through a lambda: a lambda returning a vector
    // is compiled for the file's target, and out of line its result would cross an ABI mismatch
    // (attention_rows.h's exp8).
    const size_t last = H - 1;
    const Lanes16 sums = combine_pairs_x4(acc[std::min(u0, last)], acc[std::min(u0 + 1, last)],
                                          acc[std::min(u0 + 2, last)], acc[std::min(u0 + 3, last)]);
    for (size_t u = 0; u < std::min<size_t>(4, H); ++u) {
      out[u0 + u][0] = sums[pair_lane(u, 0)];
      out[u0 + u][1] = sums[pair_lane(u, 1)];
    }
  }
  for (size_t u = 0; u < H; ++u) {
    for (size_t i = body; i < n; ++i) out[u][0] += q[u * n + i] * k0[i];
    for (size_t i = body; i < n; ++i) out[u][1] += q[u * n + i] * k1[i];
  }
}

// add_weighted_rows 16 elements at a time (64 where it can: four registers' chains of additions
// overlap instead of each waiting on its last), then its 8-lane and scalar steps.
[[gnu::always_inline]] inline void add_weighted_rows_x16(float* out, const float* prob, const float* const* v, size_t m,
                                                         size_t n) {
  size_t d = 0;
  for (; d + 64 <= n; d += 64) {
    Lanes16 a0 = load_lanes16(out + d), a1 = load_lanes16(out + d + 16), a2 = load_lanes16(out + d + 32),
            a3 = load_lanes16(out + d + 48);
    for (size_t u = 0; u < m; ++u) {
      const float w = prob[u];
      const float* row = v[u] + d;
      a0 += w * load_lanes16(row);
      a1 += w * load_lanes16(row + 16);
      a2 += w * load_lanes16(row + 32);
      a3 += w * load_lanes16(row + 48);
    }
    store_lanes16(out + d, a0);
    store_lanes16(out + d + 16, a1);
    store_lanes16(out + d + 32, a2);
    store_lanes16(out + d + 48, a3);
  }
  for (; d + 16 <= n; d += 16) {
    Lanes16 acc = load_lanes16(out + d);
    for (size_t u = 0; u < m; ++u) acc += prob[u] * load_lanes16(v[u] + d);
    store_lanes16(out + d, acc);
  }
  if (d + kLanes <= n) {
    Lanes acc = load_lanes(out + d);
    for (size_t u = 0; u < m; ++u) acc += prob[u] * load_lanes(v[u] + d);
    store_lanes(out + d, acc);
    d += kLanes;
  }
  for (; d < n; ++d) {
    for (size_t u = 0; u < m; ++u) out[d] += prob[u] * v[u][d];
  }
}

}  // namespace vks::ref::rows

#pragma GCC diagnostic pop
