// exp_lanes: within 1 ulp of exp over its whole range, exact at its edges, and the same bits for a
// float and for every lane of an 8- or 16-float vector at every ISA level this CPU executes;
// tanh_lanes the same, within 2 ulp of tanh.
#include "engine/cpu/exp_lanes.h"

#include "engine/cpu/tanh_lanes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/cpu/attention_lanes.h"
#include "engine/cpu/attention_rows_avx512.h"

#pragma GCC diagnostic ignored "-Wpsabi"

namespace vks {
namespace {

using ref::exp_lanes;
using ref::kExpMax;
using ref::kExpMin;
using ref::rows::Lanes;
using ref::rows::Lanes16;
using ref::tanh_lanes;

// Floats between a and b, counted through their bit patterns (both positive and normal here).
int64_t ulps_between(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  return ia > ib ? int64_t{ia} - ib : int64_t{ib} - ia;
}

// Every 61st float of [kExpMin, kExpMax] (about 35 million values), through its bit patterns.
std::vector<float> sample_range() {
  std::vector<float> xs;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 61) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    if (x <= kExpMax) xs.push_back(x);
    if (-x >= kExpMin) xs.push_back(-x);
  }
  return xs;
}

// The functions under test, for a float and for a vector of them.
struct Exp {
  template <class V>
  [[gnu::always_inline]] V operator()(V v) const {
    return exp_lanes(v);
  }
};
struct Tanh {
  template <class V>
  [[gnu::always_inline]] V operator()(V v) const {
    return tanh_lanes(v);
  }
};

// The largest distance in ulps between f and the double function over xs, and where (f's sign is
// the double's at every x).
struct Worst {
  int64_t ulps = 0;
  float x = 0;
};
template <class F>
Worst worst_ulps(const std::vector<float>& xs, F f, double (*exact)(double)) {
  Worst worst;
  for (const float x : xs) {
    const float got = f(x), want = static_cast<float>(exact(static_cast<double>(x)));
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << "at x = " << x;
    const int64_t d = ulps_between(std::fabs(got), std::fabs(want));
    if (d > worst.ulps) worst = {d, x};
  }
  return worst;
}

TEST(ExpLanes, WithinOneUlpOfExpOverItsRange) {
  const Worst worst = worst_ulps(sample_range(), Exp{}, [](double x) { return std::exp(x); });
  EXPECT_LE(worst.ulps, 1) << "at x = " << worst.x;
}

TEST(ExpLanes, Edges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_lanes(0.0f), 1.0f);
  EXPECT_EQ(exp_lanes(-0.0f), 1.0f);
  EXPECT_EQ(exp_lanes(-inf), 0.0f);
  EXPECT_EQ(exp_lanes(inf), inf);
  EXPECT_EQ(exp_lanes(std::nextafter(kExpMin, -inf)), 0.0f);
  EXPECT_GT(exp_lanes(kExpMin), 0.0f);
  EXPECT_EQ(exp_lanes(std::nextafter(kExpMax, inf)), inf);
  EXPECT_LT(exp_lanes(kExpMax), inf);
  EXPECT_TRUE(std::isnan(exp_lanes(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(exp_lanes(-std::numeric_limits<float>::quiet_NaN())));
}

// The inputs every level runs: the sampled range's every 97th value and the edges, padded to 16.
std::vector<float> level_inputs() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f, -0.0f, -inf, inf, std::numeric_limits<float>::quiet_NaN(), kExpMin, kExpMax,
                           std::nextafter(kExpMin, -inf), std::nextafter(kExpMax, inf), -200.0f, 200.0f};
  const std::vector<float> range = sample_range();
  for (size_t i = 0; i < range.size(); i += 97) xs.push_back(range[i]);
  while (xs.size() % 16 != 0) xs.push_back(-1.0f);
  return xs;
}

template <class F, class V>
[[gnu::always_inline]] inline void in_vectors(const float* x, float* out, size_t n) {
  constexpr size_t kWidth = sizeof(V) / sizeof(float);
  for (size_t i = 0; i < n; i += kWidth) {
    V v;
    std::memcpy(&v, x + i, sizeof v);
    const V e = F{}(v);
    std::memcpy(out + i, &e, sizeof e);
  }
}
template <class F>
void lanes8_baseline(const float* x, float* out, size_t n) {
  in_vectors<F, Lanes>(x, out, n);
}
#if defined(__x86_64__)
template <class F>
[[gnu::target("avx2")]] void lanes8_avx2(const float* x, float* out, size_t n) {
  in_vectors<F, Lanes>(x, out, n);
}
template <class F>
[[gnu::target("avx512f")]] void lanes16_avx512(const float* x, float* out, size_t n) {
  in_vectors<F, Lanes16>(x, out, n);
}
template <class F>
[[gnu::target("avx512f")]] void scalar_avx512(const float* x, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = F{}(x[i]);
}
#endif

void expect_same_bits(const std::vector<float>& want, const std::vector<float>& got, const char* level) {
  ASSERT_EQ(want.size(), got.size());
  size_t differ = 0;
  for (size_t i = 0; i < want.size(); ++i) differ += std::memcmp(&want[i], &got[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << level;
}

// F over xs (a multiple of 16 values) in 8 lanes at the baseline and AVX2, in 16 and one at a time at
// AVX-512: every result has the bits of the float function compiled for the baseline.
template <class F>
void expect_every_lane_and_level_has_the_scalars_bits(const std::vector<float>& xs) {
  std::vector<float> scalar(xs.size()), got(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) scalar[i] = F{}(xs[i]);
  lanes8_baseline<F>(xs.data(), got.data(), xs.size());
  expect_same_bits(scalar, got, "8 lanes, baseline");
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) {
    lanes8_avx2<F>(xs.data(), got.data(), xs.size());
    expect_same_bits(scalar, got, "8 lanes, avx2");
  }
  if (__builtin_cpu_supports("avx512f")) {
    lanes16_avx512<F>(xs.data(), got.data(), xs.size());
    expect_same_bits(scalar, got, "16 lanes, avx512f");
    scalar_avx512<F>(xs.data(), got.data(), xs.size());
    expect_same_bits(scalar, got, "scalar, avx512f");
  }
#endif
}

TEST(ExpLanes, EveryLaneAndLevelHasTheScalarsBits) {
  expect_every_lane_and_level_has_the_scalars_bits<Exp>(level_inputs());
}


// Every 61st float of [-10, 10] (past 9.01, tanh rounds to 1), through its bit patterns.
std::vector<float> tanh_range() {
  std::vector<float> xs;
  for (uint32_t bits = 0; bits <= 0x41200000u; bits += 61) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    xs.push_back(x);
    xs.push_back(-x);
  }
  return xs;
}

TEST(TanhLanes, WithinTwoUlpOfTanh) {
  const Worst worst = worst_ulps(tanh_range(), Tanh{}, [](double x) { return std::tanh(x); });
  EXPECT_LE(worst.ulps, 2) << "at x = " << worst.x;
}

TEST(TanhLanes, Edges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(tanh_lanes(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(tanh_lanes(-0.0f)));
  EXPECT_EQ(tanh_lanes(inf), 1.0f);
  EXPECT_EQ(tanh_lanes(-inf), -1.0f);
  EXPECT_EQ(tanh_lanes(1e30f), 1.0f);
  EXPECT_EQ(tanh_lanes(-50.0f), -1.0f);
  EXPECT_EQ(tanh_lanes(1e-30f), 1e-30f);
  EXPECT_TRUE(std::isnan(tanh_lanes(std::numeric_limits<float>::quiet_NaN())));
}

TEST(TanhLanes, EveryLaneAndLevelHasTheScalarsBits) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.625f,
                           std::nextafter(0.625f, 0.0f), -0.625f, 44.0f, -100.0f};
  const std::vector<float> range = tanh_range();
  for (size_t i = 0; i < range.size(); i += 97) xs.push_back(range[i]);
  while (xs.size() % 16 != 0) xs.push_back(0.5f);
  expect_every_lane_and_level_has_the_scalars_bits<Tanh>(xs);
}

}  // namespace
}  // namespace vks
