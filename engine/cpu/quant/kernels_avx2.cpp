// The 256-bit level (AVX2): a 32-element sub-block in one register; for several tokens, the legacy
// types take two rows per register instead (see "two rows at once" below). A 256-bit maddubs + madd gives
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
#include "engine/gguf/iq4_values.h"
#include "engine/gguf/mxfp4_codes.h"

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
    scale_add(acc, _mm_add_epi32(unsigned_lanes(w, a), _mm_load_si128(reinterpret_cast<const __m128i*>(a.neg_c8))), w.d,
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

// MXFP4: each code's doubled value plus 12 (0..24, unsigned) looked up from its nibble (pshufb
// within each 128-bit half, the 16 values in both), then Q5_0's products with offset 12, with half
// the E8M0 scale as d.
inline __m256i mxfp4_values() {
  const __m128i table = _mm_load_si128(reinterpret_cast<const __m128i*>(mxfp4::kBiasedE2M1.data()));
  return _mm256_broadcastsi128_si256(table);
}
struct MXFP4 {
  using Act = ActQ8x32;
  using W = Nibbles;
  static constexpr size_t kBytes = 17;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(mxfp4::e8m0_half(b[0]));
    w.q = _mm256_shuffle_epi8(mxfp4_values(), unpack_nibbles(b + 1));
  }
  static void dot(const W& w, const Act& a, __m128& acc, float&) {
    scale_add(acc, _mm_sub_epi32(unsigned_lanes(w, a), _mm_cvtsi32_si128(a.sum * mxfp4::kBias)), w.d, act_d(a));
  }
};

// IQ4_NL / IQ4_XS: 32 indices' signed values (ggml's kvalues_iq4nl, -127..113) in element order,
// by pshufb from the 16 values in both 128-bit halves.
inline __m256i iq4_table() {
  return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(iq4::kValues)));
}
inline __m256i iq4_values32(const uint8_t* qs) { return _mm256_shuffle_epi8(iq4_table(), unpack_nibbles(qs)); }

// IQ4_NL: the values; the rest is Q8_0's (its signed product, its W).
struct IQ4_NL : Q8_0 {
  static constexpr size_t kBytes = 18;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.q = iq4_values32(b + 2);
    w.a = _mm256_abs_epi8(w.q);
  }
};

// ---- legacy blocks of two rows at once ----
// Two rows' blocks side by side, row r in the low 128 bits and row r + 1 in the high: a 128-bit
// half of maddubs + madd over 16-byte chunks gives exactly its row's 4 lanes of the lane
// convention, so two rows share every instruction and no fold is needed. The float steps are the
// convention's per half, hence the bits of the one-row kernels (and of every other level).

// Row r's 16 bytes at p0 and row r + 1's at p1, in one register.
inline __m256i pair16(const uint8_t* p0, const uint8_t* p1) { return two(load16(p0), load16(p1)); }
// Two rows' block scales: d0 in the low four floats, d1 in the high four.
inline __m256 pair_d(const uint8_t* b0, const uint8_t* b1) {
  return _mm256_set_m128(_mm_set1_ps(half(b1)), _mm_set1_ps(half(b0)));
}
inline __m256i both_halves(const void* p) { return _mm256_broadcastsi128_si256(load16(p)); }

// acc += float(L) * (d_w * d_x) on both rows' lanes.
inline void pair_scale_add(__m256& acc, __m256i lanes, __m256 d_w, const ActQ8x32& a) {
  const __m256 d_x = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(a.dv));
  acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(lanes), _mm256_mul_ps(d_w, d_x)));
}

struct PairNibbles {
  __m256i lo, hi;  // elements 0..15 and 16..31 of both rows, as unsigned bytes
  __m256 d;
  float m[2];
};

inline void unpack_pair(__m256i q, PairNibbles& w) {
  const __m256i m4 = _mm256_set1_epi8(0xF);
  w.lo = _mm256_and_si256(q, m4);
  w.hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
}

// Pairs of u4/u5 x s8 products and their sum over the two chunks stay far inside int16.
inline __m256i pair_unsigned_lanes(const PairNibbles& w, const ActQ8x32& a) {
  const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(w.lo, both_halves(a.qs)),
                                     _mm256_maddubs_epi16(w.hi, both_halves(a.qs + 16)));
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

inline void unpack_q5_pair(const uint8_t* qh0, const uint8_t* qs0, const uint8_t* qh1, const uint8_t* qs1,
                           PairNibbles& w) {
  unpack_pair(pair16(qs0, qs1), w);
  const uint32_t b0 = load_u32(qh0), b1 = load_u32(qh1);
  w.lo = _mm256_or_si256(w.lo, two(fifth_bits(b0 & 0xFFFFu), fifth_bits(b1 & 0xFFFFu)));
  w.hi = _mm256_or_si256(w.hi, two(fifth_bits(b0 >> 16), fifth_bits(b1 >> 16)));
}

// Q4_1 and Q5_1: unsigned weights plus each row's min times the activations' sum.
inline void pair_dot_with_min(const PairNibbles& w, const ActQ8x32& a, __m256& acc, float* macc) {
  pair_scale_add(acc, pair_unsigned_lanes(w, a), w.d, a);
  macc[0] = macc[0] + w.m[0] * a.s;
  macc[1] = macc[1] + w.m[1] * a.s;
}

struct Q4_0x2 {
  using One = Q4_0;
  using W = PairNibbles;
  static void load(const uint8_t* b0, const uint8_t* b1, W& w) {
    w.d = pair_d(b0, b1);
    unpack_pair(pair16(b0 + 2, b1 + 2), w);
  }
  static void dot(const W& w, const ActQ8x32& a, __m256& acc, float*) {
    pair_scale_add(acc, _mm256_add_epi32(pair_unsigned_lanes(w, a), both_halves(a.neg_c8)), w.d, a);
  }
};

struct Q4_1x2 {
  using One = Q4_1;
  using W = PairNibbles;
  static void load(const uint8_t* b0, const uint8_t* b1, W& w) {
    w.d = pair_d(b0, b1);
    w.m[0] = half(b0 + 2);
    w.m[1] = half(b1 + 2);
    unpack_pair(pair16(b0 + 4, b1 + 4), w);
  }
  static void dot(const W& w, const ActQ8x32& a, __m256& acc, float* macc) { pair_dot_with_min(w, a, acc, macc); }
};

struct Q5_0x2 {
  using One = Q5_0;
  using W = PairNibbles;
  static void load(const uint8_t* b0, const uint8_t* b1, W& w) {
    w.d = pair_d(b0, b1);
    unpack_q5_pair(b0 + 2, b0 + 6, b1 + 2, b1 + 6, w);
  }
  static void dot(const W& w, const ActQ8x32& a, __m256& acc, float*) {
    const __m256i offset = _mm256_broadcastsi128_si256(_mm_cvtsi32_si128(a.sum * 16));
    pair_scale_add(acc, _mm256_sub_epi32(pair_unsigned_lanes(w, a), offset), w.d, a);
  }
};

struct Q5_1x2 {
  using One = Q5_1;
  using W = PairNibbles;
  static void load(const uint8_t* b0, const uint8_t* b1, W& w) {
    w.d = pair_d(b0, b1);
    w.m[0] = half(b0 + 2);
    w.m[1] = half(b1 + 2);
    unpack_q5_pair(b0 + 4, b0 + 8, b1 + 4, b1 + 8, w);
  }
  static void dot(const W& w, const ActQ8x32& a, __m256& acc, float* macc) { pair_dot_with_min(w, a, acc, macc); }
};

struct Q8_0x2 {
  using One = Q8_0;
  struct W {
    __m256i q0, q1;  // elements 0..15 and 16..31 of both rows (signed)
    __m256i a0, a1;  // their magnitudes
    __m256 d;
  };
  static void load(const uint8_t* b0, const uint8_t* b1, W& w) {
    w.d = pair_d(b0, b1);
    w.q0 = pair16(b0 + 2, b1 + 2);
    w.q1 = pair16(b0 + 18, b1 + 18);
    w.a0 = _mm256_abs_epi8(w.q0);
    w.a1 = _mm256_abs_epi8(w.q1);
  }
  static void dot(const W& w, const ActQ8x32& a, __m256& acc, float*) {
    // As the one-row kernel: each 16-byte chunk's pairs fit int16, two chunks' would not.
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(w.a0, _mm256_sign_epi8(both_halves(a.qs), w.q0)), ones);
    const __m256i p1 =
        _mm256_madd_epi16(_mm256_maddubs_epi16(w.a1, _mm256_sign_epi8(both_halves(a.qs + 16), w.q1)), ones);
    pair_scale_add(acc, _mm256_add_epi32(p0, p1), w.d, a);
  }
};

struct MXFP4x2 {
  using One = MXFP4;
  using W = PairNibbles;
  static void load(const uint8_t* b0, const uint8_t* b1, W& w) {
    w.d = _mm256_set_m128(_mm_set1_ps(mxfp4::e8m0_half(b1[0])), _mm_set1_ps(mxfp4::e8m0_half(b0[0])));
    unpack_pair(pair16(b0 + 1, b1 + 1), w);
    w.lo = _mm256_shuffle_epi8(mxfp4_values(), w.lo);
    w.hi = _mm256_shuffle_epi8(mxfp4_values(), w.hi);
  }
  static void dot(const W& w, const ActQ8x32& a, __m256& acc, float*) {
    const __m256i offset = _mm256_broadcastsi128_si256(_mm_cvtsi32_si128(a.sum * mxfp4::kBias));
    pair_scale_add(acc, _mm256_sub_epi32(pair_unsigned_lanes(w, a), offset), w.d, a);
  }
};

// IQ4_NL: both rows' values, elements 0..15 and 16..31 as Q8_0x2 holds them; the rest is Q8_0x2's.
struct IQ4_NLx2 : Q8_0x2 {
  using One = IQ4_NL;
  static void load(const uint8_t* b0, const uint8_t* b1, W& w) {
    w.d = pair_d(b0, b1);
    PairNibbles n;
    unpack_pair(pair16(b0 + 2, b1 + 2), n);
    const __m256i table = iq4_table();
    w.q0 = _mm256_shuffle_epi8(table, n.lo);
    w.q1 = _mm256_shuffle_epi8(table, n.hi);
    w.a0 = _mm256_abs_epi8(w.q0);
    w.a1 = _mm256_abs_epi8(w.q1);
  }
};

// Two rows (w0 -> y0, w1 -> y1) for NT tokens: each pair of blocks loaded and unpacked once for
// every token.
template <class K2, int NT>
void pair_tile(const uint8_t* w0, const uint8_t* w1, const ActQ8x32* const* a, size_t n_blocks, float* y0, float* y1,
               size_t y_stride) {
  constexpr size_t kBytes = K2::One::kBytes;
  typename K2::W wb;
  __m256 acc[NT];
  float macc[NT][2];
  for (int t = 0; t < NT; ++t) {
    acc[t] = _mm256_setzero_ps();
    macc[t][0] = macc[t][1] = 0.0f;
  }
  for (size_t b = 0; b < n_blocks; ++b) {
    K2::load(w0 + b * kBytes, w1 + b * kBytes, wb);
    for (int t = 0; t < NT; ++t) K2::dot(wb, a[t][b], acc[t], macc[t]);
  }
  for (int t = 0; t < NT; ++t) {
    float lanes[8];
    _mm256_storeu_ps(lanes, acc[t]);
    y0[static_cast<size_t>(t) * y_stride] = util::finish(lanes, macc[t][0]);
    y1[static_cast<size_t>(t) * y_stride] = util::finish(lanes + 4, macc[t][1]);
  }
}

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

// IQ4_XS: a sub-block's 32 values in one register, their signed products (Q8_0's) times its scale
// by madd, 8 lanes over the block folded once at its end, as Q4_K.
struct IQ4_XS {
  using Act = ActQ8x256;
  struct W {
    __m256i q[8], a[8];  // sub-block j's 32 values and their magnitudes
    __m256i sc[8];       // its scale ls - 32 in every int16
    __m128 d;
  };
  static constexpr size_t kBytes = 136;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    const __m128i sc = iq4_xs_scales(b);
    for (int j = 0; j < 8; ++j) {
      w.sc[j] = _mm256_broadcastsi128_si256(broadcast_i16(sc, j));
      w.q[j] = iq4_values32(b + 8 + 16 * j);
      w.a[j] = _mm256_abs_epi8(w.q[j]);
    }
  }
  static void dot(const W& w, const Act& a, __m128& acc, float&) {
    __m256i lanes = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i p = _mm256_maddubs_epi16(w.a[j], _mm256_sign_epi8(load32(a.qs + 32 * j), w.q[j]));
      lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(p, w.sc[j]));
    }
    scale_add(acc, fold(lanes), w.d, a.d);
  }
};

#include "engine/cpu/quant/x86_driver.inc"

// Neighbouring rows in pairs. Several tokens per weight block make this compute-bound, where the
// pairs' shared instructions pay; a one-token matvec is bound by reading the weights, and reads
// faster as one sequential stream of rows (pair_gemm leaves it to the one-row kernel).
template <class K2, int NT>
void pair_rows(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
               size_t n_blocks, float* y, size_t y_stride) {
  const ActQ8x32* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const ActQ8x32*>(act + static_cast<size_t>(t) * act_stride);
  size_t r = 0;
  for (; r + 2 <= n_rows; r += 2) {
    pair_tile<K2, NT>(w + r * w_stride, w + (r + 1) * w_stride, a, n_blocks, y + r, y + r + 1, y_stride);
  }
  if (r < n_rows) tile<typename K2::One, 1, NT>(w + r * w_stride, w_stride, a, n_blocks, y + r, y_stride);
}

template <class K2>
void pair_gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
               size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  size_t t0 = 0;
  for (; t0 + 4 <= n_tokens; t0 += 4) {
    pair_rows<K2, 4>(w, w_stride, n_rows, act + t0 * act_stride, act_stride, n_blocks, y + t0 * y_stride, y_stride);
  }
  const uint8_t* a = act + t0 * act_stride;
  float* yt = y + t0 * y_stride;
  switch (n_tokens - t0) {
    case 3: pair_rows<K2, 3>(w, w_stride, n_rows, a, act_stride, n_blocks, yt, y_stride); break;
    case 2: pair_rows<K2, 2>(w, w_stride, n_rows, a, act_stride, n_blocks, yt, y_stride); break;
    case 1: rows_tile<typename K2::One, 1>(w, w_stride, n_rows, a, act_stride, n_blocks, yt, y_stride); break;
    default: break;
  }
}


}  // namespace

void add_avx2_kernels(KernelTable& table) {
  // Every kernel here gives the avx level's bits, and that level's four-row matvec reads one token
  // faster than this level's one-row kernels (vks_bench_cpu_kernels --shapes gate/up, 1 thread, AMD
  // EPYC Zen 4: Q4_0 14.8-14.9 against 11.0-11.1 GB/s, Q5_0 9.2-9.4 against 6.8-7.4, MXFP4 10.6-10.7
  // against 9.2-9.6; TinyLlama Q4_0 decode 23.3-23.9 against 17.5-17.8 tokens/s).
  table.keeps_one_token_below = true;
  table.gemm[2] = pair_gemm<Q4_0x2>;
  table.gemm[3] = pair_gemm<Q4_1x2>;
  table.gemm[6] = pair_gemm<Q5_0x2>;
  table.gemm[7] = pair_gemm<Q5_1x2>;
  table.gemm[8] = pair_gemm<Q8_0x2>;
  table.gemm[39] = pair_gemm<MXFP4x2>;
  table.gemm[20] = pair_gemm<IQ4_NLx2>;
  table.gemm[23] = gemm<IQ4_XS>;
  table.gemm[12] = gemm<Q4_K>;
  table.gemm[14] = gemm<Q6_K>;
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
