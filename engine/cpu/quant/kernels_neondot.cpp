// The neondot level (aarch64: NEON with ARMv8.2's dot product, SDOT): the 32-element types Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL and MXFP4 and the 256-element ones Q2_K, Q3_K, Q4_K, Q5_K, Q6_K
// and IQ4_XS in the lane convention of kernels.h, so with the scalar level's bits.
//
// SDOT (vdotq_s32) adds to 32-bit lane k the products of bytes 4k..4k+3 of two 16-byte vectors:
// over a block's 16-byte halves that is the lane convention's lane (e % 16) / 4 exactly. The
// weights' values (Q4_0's nibbles 0..15, Q6_K's 0..63, IQ4_NL's table values) go in as signed bytes,
// so each product is the integer the scalar level sums; an offset (Q4_0's 8, Q5_0's 16, MXFP4's 12,
// Q6_K's 32) times the activations' sum is taken from lane 0. A K-quant sub-block's products are
// scaled in integers (exact, as the scalar level's int64 sums are) before the float steps. Those are
// the convention's, one multiply and one add per lane (the library is built with
// -ffp-contract=off, and the intrinsics used here never fuse).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernel_util.h"
#include "engine/cpu/quant/kernels.h"
#include "engine/gguf/iq4_values.h"
#include "engine/gguf/mxfp4_codes.h"
#include "engine/gguf/quant_blocks.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

namespace vks::cpuq {
namespace {

// value added to lane 0 (an offset correction)
int32x4_t add_to_lane0(int32x4_t lanes, int32_t value) { return vaddq_s32(lanes, vsetq_lane_s32(value, vdupq_n_s32(0), 0)); }

// A 32-element block's nibbles: elements 0..15 in the low ones of its 16 bytes, 16..31 in the high.
void nibbles(const uint8_t* qs, uint8x16_t& lo, uint8x16_t& hi) {
  const uint8x16_t q = vld1q_u8(qs);
  lo = vandq_u8(q, vdupq_n_u8(0x0F));
  hi = vshrq_n_u8(q, 4);
}

// Bits 2k and 2k + 1 of each byte (k = 0..3: a run-time count, so a shift by a negative vector).
uint8x16_t two_bits(uint8x16_t bytes, int k) {
  return vandq_u8(vshlq_u8(bytes, vdupq_n_s8(static_cast<int8_t>(-2 * k))), vdupq_n_u8(3));
}

// Q5_x's fifth bits: bit e of qh (e = 0..31) as 0x10 in byte e of the two halves.
void fifth_bits(uint32_t qh, uint8x16_t& lo, uint8x16_t& hi) {
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bit = vld1q_u8(kBit);
  const uint8x16_t bytes_lo = vcombine_u8(vdup_n_u8(static_cast<uint8_t>(qh)), vdup_n_u8(static_cast<uint8_t>(qh >> 8)));
  const uint8x16_t bytes_hi =
      vcombine_u8(vdup_n_u8(static_cast<uint8_t>(qh >> 16)), vdup_n_u8(static_cast<uint8_t>(qh >> 24)));
  lo = vandq_u8(vtstq_u8(bytes_lo, bit), vdupq_n_u8(0x10));
  hi = vandq_u8(vtstq_u8(bytes_hi, bit), vdupq_n_u8(0x10));
}

// The 32-element types: a block's weights as two 16-byte halves (elements 0..15, 16..31), its
// scale, its min (kHasMin), and the offset taken times the activations' sum from lane 0.
// Q4_0, Q4_1, Q5_0, Q5_1: d (fp16) at byte 0, Q4_1/Q5_1's m (fp16) at 2, Q5_x's fifth bits (a
// 32-bit word) at kQh (0: none), the nibbles at kQs.
template <size_t kBlockBytes, size_t kQs, size_t kQh, int kOffsetValue, bool kMin>
struct Legacy {
  static constexpr size_t kBytes = kBlockBytes;
  static constexpr int kOffset = kOffsetValue;
  static constexpr bool kHasMin = kMin;
  static void load(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
    uint8x16_t l, h;
    nibbles(b + kQs, l, h);
    if (kQh != 0) {
      uint8x16_t l5, h5;
      fifth_bits(util::load_u32(b + kQh), l5, h5);
      l = vorrq_u8(l, l5);
      h = vorrq_u8(h, h5);
    }
    lo = vreinterpretq_s8_u8(l);
    hi = vreinterpretq_s8_u8(h);
  }
  static float scale(const uint8_t* b) { return util::half_to_float(util::load_u16(b)); }
  static float min(const uint8_t* b) { return kMin ? util::half_to_float(util::load_u16(b + 2)) : 0.0f; }
};
using Q4_0 = Legacy<18, 2, 0, 8, false>;
using Q4_1 = Legacy<20, 4, 0, 0, true>;
using Q5_0 = Legacy<22, 6, 2, 16, false>;
using Q5_1 = Legacy<24, 8, 4, 0, true>;

struct Q8_0 {
  static constexpr size_t kBytes = 34;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = false;
  static void load(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
    lo = vld1q_s8(reinterpret_cast<const int8_t*>(b + 2));
    hi = vld1q_s8(reinterpret_cast<const int8_t*>(b + 18));
  }
  static float scale(const uint8_t* b) { return util::half_to_float(util::load_u16(b)); }
  static float min(const uint8_t*) { return 0.0f; }
};

// IQ4_NL: each nibble an index into iq4::kValues (signed), by table lookup.
struct IQ4_NL {
  static constexpr size_t kBytes = 18;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = false;
  static void load(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
    const int8x16_t values = vld1q_s8(iq4::kValues);
    uint8x16_t l, h;
    nibbles(b + 2, l, h);
    lo = vqtbl1q_s8(values, l);
    hi = vqtbl1q_s8(values, h);
  }
  static float scale(const uint8_t* b) { return util::half_to_float(util::load_u16(b)); }
  static float min(const uint8_t*) { return 0.0f; }
};

// MXFP4: each nibble a code whose doubled E2M1 value plus kBias (0..24) is looked up; d is half
// the E8M0 scale at byte 0.
struct MXFP4 {
  static constexpr size_t kBytes = 17;
  static constexpr int kOffset = mxfp4::kBias;
  static constexpr bool kHasMin = false;
  static void load(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
    const int8x16_t values = vreinterpretq_s8_u8(vld1q_u8(mxfp4::kBiasedE2M1.data()));
    uint8x16_t l, h;
    nibbles(b + 1, l, h);
    lo = vqtbl1q_s8(values, l);
    hi = vqtbl1q_s8(values, h);
  }
  static float scale(const uint8_t* b) { return mxfp4::e8m0_half(b[0]); }
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
      const float d = W::scale(block);
      const float m = W::min(block);
      for (size_t t = 0; t < kTokens; ++t) {
        int32x4_t lanes = vdotq_s32(vdotq_s32(vdupq_n_s32(0), w_lo, x_lo[t]), w_hi, x_hi[t]);
        if (W::kOffset != 0) lanes = add_to_lane0(lanes, -W::kOffset * a[t]->sum);
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
void gemm_32(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, size_t n_tokens,
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

// The K-quants (256-element blocks against ActQ8x256). A block of one row, decoded once for the
// tokens of a tile: its 256 values as 16 vectors of 16 (vector i: elements 16 i..16 i + 15, so lane
// k of an SDOT on it is the convention's lane (e % 16) / 4), the integer scale of each 16 elements,
// the offset, and the min term's integer factor per 16 elements (0 where there is none).
struct KBlock {
  int8x16_t v[16];
  int32_t scale[16];
  int32_t min[16];
  int32_t offset = 0;
  bool k_min = false;  // Q4_K, Q5_K: the min term (float(-mins) * (dmin * d_x)) goes to macc
  float d = 0, dmin = 0;
};

// Q4_K (Q5_K with qh): sub-block j (32 elements) is the low (j even) or high nibbles of
// qs[32 (j / 2) ..], Q5_K's fifth bit bit j of qh[l].
void decode_q45_k(const uint8_t* b, const uint8_t* qs, const uint8_t* qh, KBlock& o) {
  o.d = util::half_to_float(util::load_u16(b));
  o.dmin = util::half_to_float(util::load_u16(b + 2));
  o.offset = 0;
  o.k_min = true;
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    util::scale_min_k4(j, b + 4, sc, m);
    for (int half = 0; half < 2; ++half) {
      const uint8x16_t q = vld1q_u8(qs + 32 * (j / 2) + 16 * half);
      uint8x16_t v = j % 2 == 0 ? vandq_u8(q, vdupq_n_u8(0x0F)) : vshrq_n_u8(q, 4);
      if (qh != nullptr) {
        const uint8x16_t h = vld1q_u8(qh + 16 * half);
        v = vorrq_u8(v, vandq_u8(vtstq_u8(h, vdupq_n_u8(static_cast<uint8_t>(1u << j))), vdupq_n_u8(0x10)));
      }
      o.v[2 * j + half] = vreinterpretq_s8_u8(v);
      o.scale[2 * j + half] = sc;
      o.min[2 * j + half] = m;
    }
  }
}

void decode_q4_k(const uint8_t* b, KBlock& o) { decode_q45_k(b, b + 16, nullptr, o); }
void decode_q5_k(const uint8_t* b, KBlock& o) { decode_q45_k(b, b + 48, b + 16, o); }

// Q6_K: in half n, element 128 n + 32 c + l has low bits from ql[64 n + l + 32 (c & 1)] (low
// nibble for c < 2, high for c >= 2) and high bits 2c.. of qh[32 n + l]; 16 elements a scale.
void decode_q6_k(const uint8_t* b, KBlock& o) {
  o.d = util::half_to_float(util::load_u16(b + 208));
  o.dmin = 0;
  o.offset = 32;
  o.k_min = false;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 4; ++c) {
      for (int half = 0; half < 2; ++half) {
        const uint8x16_t ql = vld1q_u8(b + 64 * n + 32 * (c & 1) + 16 * half);
        const uint8x16_t qh = vld1q_u8(b + 128 + 32 * n + 16 * half);
        const uint8x16_t low = c < 2 ? vandq_u8(ql, vdupq_n_u8(0x0F)) : vshrq_n_u8(ql, 4);
        const uint8x16_t high = vshlq_n_u8(two_bits(qh, c), 4);
        const int i = 8 * n + 2 * c + half;
        o.v[i] = vreinterpretq_s8_u8(vorrq_u8(low, high));
        o.scale[i] = sc[i];
        o.min[i] = 0;
      }
    }
  }
}

// Q2_K: scales@0 (low nibble the scale, high the min), qs@16, d@80, dmin@82. Vector 8n + 2j + h
// (elements 128n + 32j + 16h ..) is bits 2j.. of qs[32n + 16h ..].
void decode_q2_k(const uint8_t* b, KBlock& o) {
  o.d = util::half_to_float(util::load_u16(b + 80));
  o.dmin = util::half_to_float(util::load_u16(b + 82));
  o.offset = 0;
  o.k_min = true;
  for (int n = 0; n < 2; ++n) {
    for (int h = 0; h < 2; ++h) {
      const uint8x16_t q = vld1q_u8(b + 16 + 32 * n + 16 * h);
      for (int j = 0; j < 4; ++j) {
        const int i = 8 * n + 2 * j + h;
        o.v[i] = vreinterpretq_s8_u8(two_bits(q, j));
        o.scale[i] = b[i] & 0xF;
        o.min[i] = b[i] >> 4;
      }
    }
  }
}

// Q3_K: hmask@0, qs@32, scales@96, d@108. As Q2_K, plus 4 where bit 4n + j of hmask[16h + l] is
// set, with signed scales and offset 4.
void decode_q3_k(const uint8_t* b, KBlock& o) {
  int scales[16];
  util::q3_k_scales(b + 96, scales);
  o.d = util::half_to_float(util::load_u16(b + 108));
  o.dmin = 0;
  o.offset = 4;
  o.k_min = false;
  for (int h = 0; h < 2; ++h) {
    const uint8x16_t hmask = vld1q_u8(b + 16 * h);
    for (int n = 0; n < 2; ++n) {
      const uint8x16_t q = vld1q_u8(b + 32 + 32 * n + 16 * h);
      for (int j = 0; j < 4; ++j) {
        const int i = 8 * n + 2 * j + h;
        const uint8x16_t low = two_bits(q, j);
        const uint8x16_t high =
            vandq_u8(vtstq_u8(hmask, vdupq_n_u8(static_cast<uint8_t>(1u << (4 * n + j)))), vdupq_n_u8(4));
        o.v[i] = vreinterpretq_s8_u8(vorrq_u8(low, high));
        o.scale[i] = scales[i];
        o.min[i] = 0;
      }
    }
  }
}

// IQ4_XS: sub-block j (32 elements) is IQ4_NL's indices in qs[16j ..] (low nibbles, then high),
// scaled by its 6-bit scale less 32.
void decode_iq4_xs(const uint8_t* b, KBlock& o) {
  BlockIQ4_XS block;
  std::memcpy(&block, b, sizeof(block));
  o.d = util::half_to_float(block.d);
  o.dmin = 0;
  o.offset = 0;
  o.k_min = false;
  const int8x16_t values = vld1q_s8(iq4::kValues);
  for (int j = 0; j < 8; ++j) {
    uint8x16_t lo, hi;
    nibbles(block.qs + 16 * j, lo, hi);
    o.v[2 * j] = vqtbl1q_s8(values, lo);
    o.v[2 * j + 1] = vqtbl1q_s8(values, hi);
    o.scale[2 * j] = o.scale[2 * j + 1] = iq4_xs_scale(block, j) - 32;
    o.min[2 * j] = o.min[2 * j + 1] = 0;
  }
}

// One row's K-quant blocks against kTokens tokens.
template <void (*Decode)(const uint8_t*, KBlock&), size_t kBlockBytes, size_t kTokens>
void k_tile(const uint8_t* row, const uint8_t* act, size_t act_stride, size_t n_blocks, float* y, size_t y_stride) {
  float32x4_t acc[kTokens];
  float macc[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = vdupq_n_f32(0.0f);
    macc[t] = 0.0f;
  }
  KBlock w;
  for (size_t b = 0; b < n_blocks; ++b) {
    Decode(row + b * kBlockBytes, w);
    for (size_t t = 0; t < kTokens; ++t) {
      const ActQ8x256& a = reinterpret_cast<const ActQ8x256*>(act + t * act_stride)[b];
      int32x4_t lanes = vdupq_n_s32(0);
      int32_t corr = 0, mins = 0;
      for (int i = 0; i < 16; ++i) {
        const int32x4_t p = vdotq_s32(vdupq_n_s32(0), w.v[i], vld1q_s8(a.qs + 16 * i));
        lanes = vmlaq_n_s32(lanes, p, w.scale[i]);
        corr += w.scale[i] * a.bsums[i];
        mins += w.min[i] * a.bsums[i];
      }
      lanes = add_to_lane0(lanes, -w.offset * corr);
      const float dd = w.d * a.d;
      acc[t] = vaddq_f32(acc[t], vmulq_f32(vcvtq_f32_s32(lanes), vdupq_n_f32(dd)));
      if (w.k_min) macc[t] = macc[t] + static_cast<float>(-mins) * (w.dmin * a.d);
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    float lanes[4];
    vst1q_f32(lanes, acc[t]);
    y[t * y_stride] = util::finish(lanes, macc[t]);
  }
}

template <void (*Decode)(const uint8_t*, KBlock&), size_t kBlockBytes>
void gemm_k(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, size_t n_tokens,
            size_t n_blocks, float* y, size_t y_stride) {
  size_t t = 0;
  for (; t + 4 <= n_tokens; t += 4) {
    for (size_t r = 0; r < n_rows; ++r) {
      k_tile<Decode, kBlockBytes, 4>(w + r * w_stride, act + t * act_stride, act_stride, n_blocks, y + t * y_stride + r,
                                     y_stride);
    }
  }
  for (; t < n_tokens; ++t) {
    for (size_t r = 0; r < n_rows; ++r) {
      k_tile<Decode, kBlockBytes, 1>(w + r * w_stride, act + t * act_stride, act_stride, n_blocks, y + t * y_stride + r,
                                     y_stride);
    }
  }
}

}  // namespace

void add_neondot_kernels(KernelTable& table) {
  table.gemm[2] = gemm_32<Q4_0>;
  table.gemm[3] = gemm_32<Q4_1>;
  table.gemm[6] = gemm_32<Q5_0>;
  table.gemm[7] = gemm_32<Q5_1>;
  table.gemm[8] = gemm_32<Q8_0>;
  table.gemm[20] = gemm_32<IQ4_NL>;
  table.gemm[39] = gemm_32<MXFP4>;
  table.gemm[10] = gemm_k<decode_q2_k, 84>;
  table.gemm[11] = gemm_k<decode_q3_k, 110>;
  table.gemm[12] = gemm_k<decode_q4_k, 144>;
  table.gemm[13] = gemm_k<decode_q5_k, 176>;
  table.gemm[14] = gemm_k<decode_q6_k, 210>;
  table.gemm[23] = gemm_k<decode_iq4_xs, 136>;
}

}  // namespace vks::cpuq

#pragma GCC pop_options

#endif  // __aarch64__
