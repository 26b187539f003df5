// The 256-bit level (AVX2): a 32-element sub-block in one register. A 256-bit maddubs + madd gives
// 8 int32 lanes, the low 4 from elements 0..15 of the 32 and the high 4 from 16..31; adding the two
// halves gives exactly the 4 lanes of the lane convention (kernels.h: integer sums are exact), so
// this level computes the 128-bit level's bits. K-quant blocks keep 8 lanes over the whole
// 256-element block and fold once at its end.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernel_util.h"
#include "engine/cpu/quant/kernels.h"

// Everything below is compiled for this level's target (kernels.h: nothing here is shared).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,f16c")
#endif

namespace vks::cpuq {
namespace {

#include "engine/cpu/quant/x86_helpers.inc"

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The 8 lanes folded to the convention's 4.
inline __m128i fold(__m256i v) { return _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)); }

inline __m256i two(__m128i lo, __m128i hi) { return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1); }

// ---- legacy 32-element blocks ----

struct Nibbles {
  __m256i q;  // the 32 unsigned weights in element order
  __m128 d;
  float m;
};

inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i q = load16(qs);
  return _mm256_and_si256(two(q, _mm_srli_epi16(q, 4)), _mm256_set1_epi8(0xF));
}

inline __m128i unsigned_lanes(const Nibbles& w, const ActQ8x32& a) {
  return fold(_mm256_madd_epi16(_mm256_maddubs_epi16(w.q, load32(a.qs)), _mm256_set1_epi16(1)));
}

struct Q4_0 {
  using Act = ActQ8x32;
  using W = Nibbles;
  static constexpr size_t kBytes = 18;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.q = unpack_nibbles(b + 2);
  }
  static void dot(const W& w, const Act& a, __m128& acc, float&) {
    scale_add(acc, _mm_sub_epi32(unsigned_lanes(w, a), _mm_load_si128(reinterpret_cast<const __m128i*>(a.c8))), w.d,
              act_d(a));
  }
};

struct Q4_1 {
  using Act = ActQ8x32;
  using W = Nibbles;
  static constexpr size_t kBytes = 20;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.m = half(b + 2);
    w.q = unpack_nibbles(b + 4);
  }
  static void dot(const W& w, const Act& a, __m128& acc, float& macc) {
    scale_add(acc, unsigned_lanes(w, a), w.d, act_d(a));
    macc = macc + w.m * a.s;
  }
};

inline __m256i unpack_q5(const uint8_t* qh, const uint8_t* qs) {
  const uint32_t bits = load_u32(qh);
  return _mm256_or_si256(unpack_nibbles(qs), two(fifth_bits(bits & 0xFFFFu), fifth_bits(bits >> 16)));
}

struct Q5_0 {
  using Act = ActQ8x32;
  using W = Nibbles;
  static constexpr size_t kBytes = 22;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.q = unpack_q5(b + 2, b + 6);
  }
  static void dot(const W& w, const Act& a, __m128& acc, float&) {
    scale_add(acc, _mm_sub_epi32(unsigned_lanes(w, a), _mm_cvtsi32_si128(a.sum * 16)), w.d, act_d(a));
  }
};

struct Q5_1 {
  using Act = ActQ8x32;
  using W = Nibbles;
  static constexpr size_t kBytes = 24;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.m = half(b + 2);
    w.q = unpack_q5(b + 4, b + 8);
  }
  static void dot(const W& w, const Act& a, __m128& acc, float& macc) {
    scale_add(acc, unsigned_lanes(w, a), w.d, act_d(a));
    macc = macc + w.m * a.s;
  }
};

struct Q8_0 {
  using Act = ActQ8x32;
  struct W {
    __m256i q, a;  // signed weights and their magnitudes
    __m128 d;
  };
  static constexpr size_t kBytes = 34;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.q = load32(b + 2);
    w.a = _mm256_abs_epi8(w.q);
  }
  static void dot(const W& w, const Act& a, __m128& acc, float&) {
    // Pairs reach 2 * 128 * 127 < 2^15 (x is never -128), so one maddubs is exact.
    const __m256i p = _mm256_maddubs_epi16(w.a, _mm256_sign_epi8(load32(a.qs), w.q));
    scale_add(acc, fold(_mm256_madd_epi16(p, _mm256_set1_epi16(1))), w.d, act_d(a));
  }
};

// ---- K-quants ----

struct Q4_K {
  using Act = ActQ8x256;
  struct W {
    __m256i q[8];   // sub-block j's 32 unsigned weights
    __m256i sc[8];  // its scale in every int16
    __m128i mins_lo, mins_hi;
    __m128 d;
    float dmin;
  };
  static constexpr size_t kBytes = 144;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.dmin = half(b + 2);
    const __m128i sm = k4_scales_mins(b + 4);
    const __m128i sc = _mm_cvtepu8_epi16(sm);
    const __m128i mins = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
    for (int j = 0; j < 8; ++j) w.sc[j] = _mm256_broadcastsi128_si256(broadcast_i16(sc, j));
    w.mins_lo = _mm_unpacklo_epi16(mins, mins);  // each min twice: once per 16-element sum
    w.mins_hi = _mm_unpackhi_epi16(mins, mins);
    const __m256i m4 = _mm256_set1_epi8(0xF);
    for (int p = 0; p < 4; ++p) {
      const __m256i q = load32(b + 16 + 32 * p);
      w.q[2 * p] = _mm256_and_si256(q, m4);
      w.q[2 * p + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    }
  }
  static void dot(const W& w, const Act& a, __m128& acc, float& macc) {
    __m256i lanes = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i p = _mm256_maddubs_epi16(w.q[j], load32(a.qs + 32 * j));
      lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(p, w.sc[j]));
    }
    scale_add(acc, fold(lanes), w.d, a.d);
    const int32_t mins = bsums_dot(a, w.mins_lo, w.mins_hi);
    macc = macc + static_cast<float>(-mins) * (w.dmin * a.d);
  }
};

struct Q6_K {
  using Act = ActQ8x256;
  struct W {
    __m256i q[8];   // elements 32i..32i+31 (unsigned 0..63)
    __m256i sc[8];  // the scales of their two 16-element sub-blocks, each in its half
    __m128i sc_lo, sc_hi;
    __m128 d;
  };
  static constexpr size_t kBytes = 210;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b + 208));
    const __m128i scales = load16(b + 192);
    w.sc_lo = _mm_cvtepi8_epi16(scales);
    w.sc_hi = _mm_cvtepi8_epi16(_mm_srli_si128(scales, 8));
    for (int i = 0; i < 8; ++i) {
      const __m128i half_scales = i < 4 ? w.sc_lo : w.sc_hi;  // sub-blocks 2i, 2i + 1
      w.sc[i] = two(broadcast_i16(half_scales, (2 * i) % 8), broadcast_i16(half_scales, (2 * i + 1) % 8));
    }
    const __m256i m4 = _mm256_set1_epi8(0xF);
    const __m256i m30 = _mm256_set1_epi8(0x30);
    for (int n = 0; n < 2; ++n) {
      const __m256i l01 = load32(b + 64 * n);
      const __m256i l23 = load32(b + 64 * n + 32);
      const __m256i h = load32(b + 128 + 32 * n);
      __m256i* q = w.q + 4 * n;
      q[0] = _mm256_or_si256(_mm256_and_si256(l01, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
      q[1] = _mm256_or_si256(_mm256_and_si256(l23, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l01, 4), m4), _mm256_and_si256(h, m30));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l23, 4), m4),
                             _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
    }
  }
  static void dot(const W& w, const Act& a, __m128& acc, float&) {
    __m256i lanes = _mm256_setzero_si256();
    for (int i = 0; i < 8; ++i) {
      lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(w.q[i], load32(a.qs + 32 * i)), w.sc[i]));
    }
    const int32_t corr = bsums_dot(a, w.sc_lo, w.sc_hi);
    scale_add(acc, _mm_sub_epi32(fold(lanes), _mm_cvtsi32_si128(corr * 32)), w.d, a.d);
  }
};

#include "engine/cpu/quant/x86_driver.inc"

}  // namespace

void add_avx2_kernels(KernelTable& table) {
  table.gemm[2] = gemm<Q4_0>;
  table.gemm[3] = gemm<Q4_1>;
  table.gemm[6] = gemm<Q5_0>;
  table.gemm[7] = gemm<Q5_1>;
  table.gemm[8] = gemm<Q8_0>;
  table.gemm[12] = gemm<Q4_K>;
  table.gemm[14] = gemm<Q6_K>;
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
