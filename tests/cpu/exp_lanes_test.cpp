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

TEST(ExpLanes, WithinOneUlpOfExpOverItsRange) {
  int64_t worst = 0;
  float worst_x = 0;
  for (const float x : sample_range()) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    const int64_t d = ulps_between(exp_lanes(x), want);
    if (d > worst) {
      worst = d;
      worst_x = x;
    }
  }
  EXPECT_LE(worst, 1) << "at x = " << worst_x;
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

template <class V>
[[gnu::always_inline]] inline void exp_vectors(const float* x, float* out, size_t n) {
  constexpr size_t kWidth = sizeof(V) / sizeof(float);
  for (size_t i = 0; i < n; i += kWidth) {
    V v;
    std::memcpy(&v, x + i, sizeof v);
    const V e = exp_lanes(v);
    std::memcpy(out + i, &e, sizeof e);
  }
}
void exp8_baseline(const float* x, float* out, size_t n) { exp_vectors<Lanes>(x, out, n); }
#if defined(__x86_64__)
[[gnu::target("avx2")]] void exp8_avx2(const float* x, float* out, size_t n) { exp_vectors<Lanes>(x, out, n); }
[[gnu::target("avx512f")]] void exp16_avx512(const float* x, float* out, size_t n) {
  exp_vectors<Lanes16>(x, out, n);
}
[[gnu::target("avx512f")]] void exp1_avx512(const float* x, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = exp_lanes(x[i]);
}
#endif

void expect_same_bits(const std::vector<float>& want, const std::vector<float>& got, const char* level) {
  ASSERT_EQ(want.size(), got.size());
  size_t differ = 0;
  for (size_t i = 0; i < want.size(); ++i) differ += std::memcmp(&want[i], &got[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << level;
}

TEST(ExpLanes, EveryLaneAndLevelHasTheScalarsBits) {
  const std::vector<float> xs = level_inputs();
  std::vector<float> scalar(xs.size()), got(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) scalar[i] = exp_lanes(xs[i]);
  exp8_baseline(xs.data(), got.data(), xs.size());
  expect_same_bits(scalar, got, "8 lanes, baseline");
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) {
    exp8_avx2(xs.data(), got.data(), xs.size());
    expect_same_bits(scalar, got, "8 lanes, avx2");
  }
  if (__builtin_cpu_supports("avx512f")) {
    exp16_avx512(xs.data(), got.data(), xs.size());
    expect_same_bits(scalar, got, "16 lanes, avx512f");
    exp1_avx512(xs.data(), got.data(), xs.size());
    expect_same_bits(scalar, got, "scalar, avx512f");
  }
#endif
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
  int64_t worst = 0;
  float worst_x = 0;
  for (const float x : tanh_range()) {
    const float want = static_cast<float>(std::tanh(static_cast<double>(x)));
    const int64_t d = ulps_between(std::fabs(tanh_lanes(x)), std::fabs(want));
    ASSERT_EQ(std::signbit(tanh_lanes(x)), std::signbit(want)) << "at x = " << x;
    if (d > worst) {
      worst = d;
      worst_x = x;
    }
  }
  EXPECT_LE(worst, 2) << "at x = " << worst_x;
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

template <class V>
[[gnu::always_inline]] inline void tanh_vectors(const float* x, float* out, size_t n) {
  constexpr size_t kWidth = sizeof(V) / sizeof(float);
  for (size_t i = 0; i < n; i += kWidth) {
    V v;
    std::memcpy(&v, x + i, sizeof v);
    const V t = tanh_lanes(v);
    std::memcpy(out + i, &t, sizeof t);
  }
}
void tanh8_baseline(const float* x, float* out, size_t n) { tanh_vectors<Lanes>(x, out, n); }
#if defined(__x86_64__)
[[gnu::target("avx2")]] void tanh8_avx2(const float* x, float* out, size_t n) { tanh_vectors<Lanes>(x, out, n); }
[[gnu::target("avx512f")]] void tanh16_avx512(const float* x, float* out, size_t n) {
  tanh_vectors<Lanes16>(x, out, n);
}
#endif

TEST(TanhLanes, EveryLaneAndLevelHasTheScalarsBits) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.625f,
                           std::nextafter(0.625f, 0.0f), -0.625f, 44.0f, -100.0f};
  const std::vector<float> range = tanh_range();
  for (size_t i = 0; i < range.size(); i += 97) xs.push_back(range[i]);
  while (xs.size() % 16 != 0) xs.push_back(0.5f);
  std::vector<float> scalar(xs.size()), got(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) scalar[i] = tanh_lanes(xs[i]);
  tanh8_baseline(xs.data(), got.data(), xs.size());
  expect_same_bits(scalar, got, "8 lanes, baseline");
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) {
    tanh8_avx2(xs.data(), got.data(), xs.size());
    expect_same_bits(scalar, got, "8 lanes, avx2");
  }
  if (__builtin_cpu_supports("avx512f")) {
    tanh16_avx512(xs.data(), got.data(), xs.size());
    expect_same_bits(scalar, got, "16 lanes, avx512f");
  }
#endif
}

}  // namespace
}  // namespace vks
