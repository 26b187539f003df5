// The neondot level (aarch64: NEON with ARMv8.2's dot product, SDOT): Q4_0, Q4_1 and Q8_0 in the lane
// convention of kernels.h, so with the scalar level's bits; every other type keeps the scalar
// level's kernel.
//
// SDOT (vdotq_s32) adds to 32-bit lane k the products of bytes 4k..4k+3 of two 16-byte vectors:
// over a block's 16-byte halves that is the lane convention's lane (e % 16) / 4 exactly. The
// weights' nibbles (0..15) go in as signed bytes, so each product is the integer the scalar level
// sums; Q4_0's -8 times the activations' sum goes to lane 0 (ActQ8x32::neg_c8). The float steps are
// the convention's, one multiply and one add per lane (the library is built with
// -ffp-contract=off, and the intrinsics used here never fuse).
#include <cstddef>
#include <cstdint>

#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernel_util.h"
#include "engine/cpu/quant/kernels.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

namespace vks::cpuq {
namespace {

// A block's 32 weights as two 16-byte halves (elements 0..15, 16..31), with its scale and min.
struct Q4_0 {
  static constexpr size_t kBytes = 18;
  static void load(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
    const uint8x16_t q = vld1q_u8(b + 2);
    lo = vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F)));
    hi = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
  }
  static int32x4_t correct(int32x4_t lanes, const ActQ8x32& a) { return vaddq_s32(lanes, vld1q_s32(a.neg_c8)); }
  static constexpr bool kHasMin = false;
  static float min(const uint8_t*) { return 0.0f; }
};

struct Q4_1 {
  static constexpr size_t kBytes = 20;
  static void load(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
    const uint8x16_t q = vld1q_u8(b + 4);
    lo = vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F)));
    hi = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
  }
  static int32x4_t correct(int32x4_t lanes, const ActQ8x32&) { return lanes; }
  static constexpr bool kHasMin = true;
  static float min(const uint8_t* b) { return util::half_to_float(util::load_u16(b + 2)); }
};

struct Q8_0 {
  static constexpr size_t kBytes = 34;
  static void load(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
    lo = vld1q_s8(reinterpret_cast<const int8_t*>(b + 2));
    hi = vld1q_s8(reinterpret_cast<const int8_t*>(b + 18));
  }
  static int32x4_t correct(int32x4_t lanes, const ActQ8x32&) { return lanes; }
  static constexpr bool kHasMin = false;
  static float min(const uint8_t*) { return 0.0f; }
};

// kRows rows x kTokens tokens: each weight block loaded once for kTokens tokens, each activation
// block once for kRows rows.
template <class W, size_t kRows, size_t kTokens>
void tile(const uint8_t* w, size_t w_stride, const uint8_t* act, size_t act_stride, size_t n_blocks, float* y,
          size_t y_stride) {
  float32x4_t acc[kRows][kTokens];
  float macc[kRows][kTokens];
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t t = 0; t < kTokens; ++t) {
      acc[r][t] = vdupq_n_f32(0.0f);
      macc[r][t] = 0.0f;
    }
  }
  for (size_t b = 0; b < n_blocks; ++b) {
    const ActQ8x32* a[kTokens];
    int8x16_t x_lo[kTokens], x_hi[kTokens];
    for (size_t t = 0; t < kTokens; ++t) {
      a[t] = reinterpret_cast<const ActQ8x32*>(act + t * act_stride) + b;
      x_lo[t] = vld1q_s8(a[t]->qs);
      x_hi[t] = vld1q_s8(a[t]->qs + 16);
    }
    for (size_t r = 0; r < kRows; ++r) {
      const uint8_t* block = w + r * w_stride + b * W::kBytes;
      int8x16_t w_lo, w_hi;
      W::load(block, w_lo, w_hi);
      const float d = util::half_to_float(util::load_u16(block));
      const float m = W::min(block);
      for (size_t t = 0; t < kTokens; ++t) {
        int32x4_t lanes = vdotq_s32(vdotq_s32(vdupq_n_s32(0), w_lo, x_lo[t]), w_hi, x_hi[t]);
        lanes = W::correct(lanes, *a[t]);
        const float dd = d * a[t]->d;
        acc[r][t] = vaddq_f32(acc[r][t], vmulq_f32(vcvtq_f32_s32(lanes), vdupq_n_f32(dd)));
        if (W::kHasMin) macc[r][t] = macc[r][t] + m * a[t]->s;
      }
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t t = 0; t < kTokens; ++t) {
      float lanes[4];
      vst1q_f32(lanes, acc[r][t]);
      y[t * y_stride + r] = util::finish(lanes, macc[r][t]);
    }
  }
}

// Tokens four at a time, two rows a tile (one token: four rows a tile); the rest one by one.
template <class W>
void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, size_t n_tokens,
          size_t n_blocks, float* y, size_t y_stride) {
  size_t t = 0;
  for (; t + 4 <= n_tokens; t += 4) {
    const uint8_t* a = act + t * act_stride;
    float* out = y + t * y_stride;
    size_t r = 0;
    for (; r + 2 <= n_rows; r += 2) tile<W, 2, 4>(w + r * w_stride, w_stride, a, act_stride, n_blocks, out + r, y_stride);
    for (; r < n_rows; ++r) tile<W, 1, 4>(w + r * w_stride, w_stride, a, act_stride, n_blocks, out + r, y_stride);
  }
  for (; t < n_tokens; ++t) {
    const uint8_t* a = act + t * act_stride;
    float* out = y + t * y_stride;
    size_t r = 0;
    for (; r + 4 <= n_rows; r += 4) tile<W, 4, 1>(w + r * w_stride, w_stride, a, act_stride, n_blocks, out + r, y_stride);
    for (; r < n_rows; ++r) tile<W, 1, 1>(w + r * w_stride, w_stride, a, act_stride, n_blocks, out + r, y_stride);
  }
}

}  // namespace

void add_neondot_kernels(KernelTable& table) {
  table.gemm[2] = gemm<Q4_0>;
  table.gemm[3] = gemm<Q4_1>;
  table.gemm[8] = gemm<Q8_0>;
}

}  // namespace vks::cpuq

#pragma GCC pop_options

#endif  // __aarch64__
