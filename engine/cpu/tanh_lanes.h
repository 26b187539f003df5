#pragma once
// tanh(x) with the same bits for a float and for every lane of a vector of floats, as exp_lanes
// (exp_lanes.h: the same rules for targets, -ffp-contract=off and vector widths hold here). glibc's
// tanhf goes through expm1f one value at a time; Gemma 2's soft-caps call it once per attention
// score and once per vocabulary entry of each token's logits.
//
// Cephes' tanhf on |x|, then x's sign: below 0.625 a polynomial (no cancellation near 0), from
// there 1 - 2 / (exp(2|x|) + 1) (exp_lanes is +inf past 44, which gives exactly 1). Within 2 ulp of
// tanh (tests/cpu/exp_lanes_test.cpp); NaN for NaN.
#include <cstdint>

#include "engine/cpu/exp_lanes.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vks::ref {

template <class V>
[[gnu::always_inline]] inline V tanh_lanes(V x) {
  using Bits = typename BitsOf<V>::type;
  const Bits sign = bits_of(x) & 0x80000000u;
  const V ax = floats_of<V>(bits_of(x) & 0x7fffffffu);
  // Near 0: |x| + |x|^3 P(x^2).
  const V z = ax * ax;
  V p = V{} + -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z + -5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z + -3.33332819422e-1f;
  const V small = (p * z) * ax + ax;
  // Elsewhere: 1 - 2 / (e^(2|x|) + 1).
  const V large = 1.0f - 2.0f / (exp_lanes(ax + ax) + 1.0f);
  // tanh is odd: x's sign on either (so tanh(-0) is -0).
  return floats_of<V>(bits_of(ax < 0.625f ? small : large) | sign);
}

}  // namespace vks::ref

#pragma GCC diagnostic pop
