#pragma once
// exp(x) with the same bits for a float and for every lane of a vector of floats, so that a loop
// over 8 or 16 lanes and its scalar tail (or the plain loop the tests spell out) agree exactly,
// and every ISA level that compiles it gives the same bits. glibc's expf differs between its FMA
// and non-FMA builds and has no vector form; softmax and SiLU call exp once per score or element,
// and taking them in lanes cut attention's time in cache by a quarter at 1,024 positions
// (vks_bench_cpu_attention, AMD EPYC: 375-381 -> 275-279 us).
//
// Cephes' expf: x = n ln2 + r with n = round(x / ln2) (the round-to-nearest of adding 1.5 * 2^23)
// and ln2 split in two so that n * ln2's high part is exact; a degree-7 polynomial for exp(r) on
// |r| <= ln2 / 2; 2^n from n's bits. At most 1 ulp from exp (tests/cpu/exp_lanes_test.cpp). Below
// kExpMin it returns 0 (exp is under 1.3e-38 there), above kExpMax +inf, NaN for NaN.
//
// Every operation is an IEEE float operation in a fixed order. Where it is compiled for a target
// with FMA (a gnu::target copy), the file compiles with -ffp-contract=off, so that no level fuses a
// multiply-add another does not (GCC's -std=c++20 defaults to off; the flag keeps it so).
//
// V no wider than the target's vector registers: GCC 12 splits a comparison on a wider vector into
// scalar ones (eight comiss for 8 floats on SSE2), which made the range checks slower than the
// scalar expf they replace. So the baseline copies take 4 floats (rows::Lanes4), AVX2 8, AVX-512 16.
#include <cstdint>
#include <type_traits>

// As in attention_lanes.h: vector values pass between always_inline functions only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vks::ref {

inline constexpr float kExpMin = -87.3f;  // n >= -126: 2^n is a normal float
inline constexpr float kExpMax = 88.0f;   // n <= 127

// The unsigned integers of V's bits: a vector of them as wide as V, or one.
template <class V>
struct BitsOf {
  typedef uint32_t type __attribute__((vector_size(sizeof(V))));
};
template <>
struct BitsOf<float> {
  using type = uint32_t;
};

// V's bits as BitsOf<V>, and back.
template <class V>
[[gnu::always_inline]] inline typename BitsOf<V>::type bits_of(V v) {
  if constexpr (std::is_same_v<V, float>) {
    return __builtin_bit_cast(uint32_t, v);
  } else {
    return reinterpret_cast<typename BitsOf<V>::type>(v);
  }
}
template <class V>
[[gnu::always_inline]] inline V floats_of(typename BitsOf<V>::type b) {
  if constexpr (std::is_same_v<V, float>) {
    return __builtin_bit_cast(float, b);
  } else {
    return reinterpret_cast<V>(b);
  }
}

// V: float, or a GCC vector of floats (vector_size of 4 * lanes bytes).
template <class V>
[[gnu::always_inline]] inline V exp_lanes(V x) {
  using Bits = typename BitsOf<V>::type;
  const V lo = x < kExpMin ? V{} + kExpMin : x;  // NaN stays NaN (a comparison with it is false)
  const V y = lo > kExpMax ? V{} + kExpMax : lo;
  constexpr float kLog2e = 1.44269504088896341f, kRound = 12582912.0f;  // 1.5 * 2^23
  const V shifted = y * kLog2e + kRound;  // n in the low mantissa bits
  const V n = shifted - kRound;
  V r = y - n * 0.693359375f;  // ln2's high part (9 bits: n * it is exact)
  r = r - n * -2.12194440e-4f;   // and its low part
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = (p * (r * r) + r) + 1.0f;
  const Bits scale = (bits_of(shifted) - bits_of(V{} + kRound) + 127u) << 23;  // 2^n
  const V e = p * floats_of<V>(scale);
  return x > kExpMax ? V{} + __builtin_inff() : (x < kExpMin ? V{} : e);
}

}  // namespace vks::ref

#pragma GCC diagnostic pop
