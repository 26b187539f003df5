#pragma once
// The 8-lane operations that fix the bits of the CPU backend's dot products and of attention
// (ref::dot, attention_rows.h): a dot product's element i goes to lane i % 8, the lanes are combined
// by combine_lanes, then the n % 8 tail in order; a value row is added with one multiply and one add
// per element. Wider copies (attention_rows_avx512.h) repeat exactly these operations.
#include <cstddef>

// Lanes values pass between always_inline functions only (never across a call), so the ABI of an
// AVX-sized vector argument, which GCC warns about in the baseline copy, never applies.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vks::ref::rows {

inline constexpr size_t kLanes = 8;      // dot()'s partial sums; element i goes to lane i % 8

// Eight floats as one value: element-wise IEEE operations, so the bits are those of the scalar
// loops over the same elements in the same order; the compiler keeps them in registers (an array
// of partial sums it spills on every iteration).
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));
// Four floats: the widest vector the baseline's registers hold (exp_lanes.h: why that matters).
using Lanes4 = float __attribute__((vector_size(4 * sizeof(float))));
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

}  // namespace vks::ref::rows

#pragma GCC diagnostic pop
