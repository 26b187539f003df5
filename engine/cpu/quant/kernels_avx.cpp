// The 128-bit level (CPUs with AVX and F16C but maybe without AVX2, such as this project's CI
// machines): SSSE3 maddubs (u8 x s8 -> pairs of i16) and madd (-> i32) on 16-byte chunks, which
// give the 4 lanes of the lane convention (kernels.h) directly. Each kernel loads and unpacks a
// weight block (or, for Q4_K/Q5_K/Q6_K, a 32-element group of it) once for several tokens: the
// legacy types' kernels are in avx_float_pairs.inc, those K-quants' and IQ4_XS's in
// avx_kquant_tiles.inc, and Q2_K/Q3_K take the generic driver (x86_driver.inc) with the structs below.
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
#pragma clang attribute push(__attribute__((target("avx,f16c,ssse3,sse4.1"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx,f16c,ssse3,sse4.1")
#endif

namespace vks::cpuq {
namespace {

#include "engine/cpu/quant/x86_helpers.inc"

// ---- legacy 32-element blocks with 32-element activation blocks ----

struct Nibbles {
  __m128i lo, hi;  // elements 0..15 and 16..31 as unsigned bytes
  __m128 d;
  float m;
};

inline void unpack_nibbles(const uint8_t* qs, Nibbles& w) {
  const __m128i q = load16(qs);
  const __m128i m4 = _mm_set1_epi8(0xF);
  w.lo = _mm_and_si128(q, m4);
  w.hi = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
}

// Lanes of the unsigned weights times the activations (pairs of u4/u5 x s8 stay far inside i16).
inline __m128i unsigned_lanes(const Nibbles& w, const ActQ8x32& a) {
  const __m128i p = _mm_add_epi16(_mm_maddubs_epi16(w.lo, _mm_load_si128(reinterpret_cast<const __m128i*>(a.qs))),
                                  _mm_maddubs_epi16(w.hi, _mm_load_si128(reinterpret_cast<const __m128i*>(a.qs + 16))));
  return _mm_madd_epi16(p, _mm_set1_epi16(1));
}

struct Q4_0 {
  using Act = ActQ8x32;
  using W = Nibbles;
  static constexpr size_t kBytes = 18;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    unpack_nibbles(b + 2, w);
  }
  static __m128i lanes(const W& w, const Act& a) {
    return _mm_add_epi32(unsigned_lanes(w, a), _mm_load_si128(reinterpret_cast<const __m128i*>(a.neg_c8)));
  }
  static void min_term(const W&, const Act&, float&) {}
  static void dot(const W& w, const Act& a, __m128& acc, float&) { scale_add(acc, lanes(w, a), w.d, act_d(a)); }
};

struct Q4_1 {
  using Act = ActQ8x32;
  using W = Nibbles;
  static constexpr size_t kBytes = 20;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.m = half(b + 2);
    unpack_nibbles(b + 4, w);
  }
  static __m128i lanes(const W& w, const Act& a) { return unsigned_lanes(w, a); }
  static void min_term(const W& w, const Act& a, float& macc) { macc = macc + w.m * a.s; }
  static void dot(const W& w, const Act& a, __m128& acc, float& macc) {
    scale_add(acc, lanes(w, a), w.d, act_d(a));
    min_term(w, a, macc);
  }
};

inline void unpack_q5(const uint8_t* qh, const uint8_t* qs, Nibbles& w) {
  unpack_nibbles(qs, w);
  const uint32_t bits = load_u32(qh);
  w.lo = _mm_or_si128(w.lo, fifth_bits(bits & 0xFFFFu));
  w.hi = _mm_or_si128(w.hi, fifth_bits(bits >> 16));
}

struct Q5_0 {
  using Act = ActQ8x32;
  using W = Nibbles;
  static constexpr size_t kBytes = 22;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    unpack_q5(b + 2, b + 6, w);
  }
  static __m128i lanes(const W& w, const Act& a) {
    return _mm_sub_epi32(unsigned_lanes(w, a), _mm_cvtsi32_si128(a.sum * 16));
  }
  static void min_term(const W&, const Act&, float&) {}
  static void dot(const W& w, const Act& a, __m128& acc, float&) { scale_add(acc, lanes(w, a), w.d, act_d(a)); }
};

struct Q5_1 {
  using Act = ActQ8x32;
  using W = Nibbles;
  static constexpr size_t kBytes = 24;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.m = half(b + 2);
    unpack_q5(b + 4, b + 8, w);
  }
  static __m128i lanes(const W& w, const Act& a) { return unsigned_lanes(w, a); }
  static void min_term(const W& w, const Act& a, float& macc) { macc = macc + w.m * a.s; }
  static void dot(const W& w, const Act& a, __m128& acc, float& macc) {
    scale_add(acc, lanes(w, a), w.d, act_d(a));
    min_term(w, a, macc);
  }
};

struct Q8_0 {
  using Act = ActQ8x32;
  struct W {
    __m128i q0, q1;    // signed weights
    __m128i a0, a1;    // their magnitudes (maddubs wants one unsigned side)
    __m128 d;
  };
  static constexpr size_t kBytes = 34;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.q0 = load16(b + 2);
    w.q1 = load16(b + 18);
    w.a0 = _mm_abs_epi8(w.q0);
    w.a1 = _mm_abs_epi8(w.q1);
  }
  static __m128i lanes(const W& w, const Act& a) {
    // |w| * (x with w's sign) = w * x; x is never -128, so the sign flip is exact. A pair reaches
    // 2 * 128 * 127 < 2^15, but two chunks' pairs together would not: madd each chunk.
    const __m128i x0 = _mm_load_si128(reinterpret_cast<const __m128i*>(a.qs));
    const __m128i x1 = _mm_load_si128(reinterpret_cast<const __m128i*>(a.qs + 16));
    const __m128i ones = _mm_set1_epi16(1);
    const __m128i p0 = _mm_madd_epi16(_mm_maddubs_epi16(w.a0, _mm_sign_epi8(x0, w.q0)), ones);
    const __m128i p1 = _mm_madd_epi16(_mm_maddubs_epi16(w.a1, _mm_sign_epi8(x1, w.q1)), ones);
    return _mm_add_epi32(p0, p1);
  }
  static void min_term(const W&, const Act&, float&) {}
  static void dot(const W& w, const Act& a, __m128& acc, float&) { scale_add(acc, lanes(w, a), w.d, act_d(a)); }
};

// MXFP4: each code's doubled value plus 12 (0..24, unsigned) looked up from its nibble, then Q5_0's
// products with offset 12, with half the E8M0 scale as d.
struct MXFP4 {
  using Act = ActQ8x32;
  using W = Nibbles;
  static constexpr size_t kBytes = 17;
  static constexpr bool kE8m0Scale = true;  // matvec's four_scales reads them so
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(mxfp4::e8m0_half(b[0]));
    unpack_nibbles(b + 1, w);
    const __m128i values = _mm_load_si128(reinterpret_cast<const __m128i*>(mxfp4::kBiasedE2M1.data()));
    w.lo = _mm_shuffle_epi8(values, w.lo);
    w.hi = _mm_shuffle_epi8(values, w.hi);
  }
  // Pairs of u5 x s8 (0..24 times at most 127) stay inside i16, the two chunks' sum too.
  static __m128i lanes(const W& w, const Act& a) {
    return _mm_sub_epi32(unsigned_lanes(w, a), _mm_cvtsi32_si128(a.sum * mxfp4::kBias));
  }
  static void min_term(const W&, const Act&, float&) {}
  static void dot(const W& w, const Act& a, __m128& acc, float&) { scale_add(acc, lanes(w, a), w.d, act_d(a)); }
};

// IQ4_NL: each index's value (-127..113) looked up from its nibble; the rest is Q8_0's (its signed
// products, its W).
struct IQ4_NL : Q8_0 {
  static constexpr size_t kBytes = 18;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    iq4_values(b + 2, w.q0, w.q1);
    w.a0 = _mm_abs_epi8(w.q0);
    w.a1 = _mm_abs_epi8(w.q1);
  }
};

// ---- K-quants (256-element super-blocks) with 256-element activation blocks ----

struct Q4_K {
  using Act = ActQ8x256;
  struct W {
    __m128i q[16];   // 16-element chunks in element order (unsigned 0..15)
    __m128i sc[8];   // each sub-block's scale in every int16
    __m128i mins_lo, mins_hi;  // each sub-block's min, twice (once per 16-element activation sum)
    __m128 d;
    float dmin;
  };
  static constexpr size_t kBytes = 144;
  static void load_scales(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b));
    w.dmin = half(b + 2);
    const __m128i sm = k4_scales_mins(b + 4);
    const __m128i sc = _mm_cvtepu8_epi16(sm);
    const __m128i mins = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
    for (int j = 0; j < 8; ++j) w.sc[j] = broadcast_i16(sc, j);
    w.mins_lo = _mm_unpacklo_epi16(mins, mins);  // each min twice: once per 16-element sum
    w.mins_hi = _mm_unpackhi_epi16(mins, mins);
  }
  static void load(const uint8_t* b, W& w) {
    load_scales(b, w);
    const __m128i m4 = _mm_set1_epi8(0xF);
    for (int p = 0; p < 4; ++p) {
      const __m128i q0 = load16(b + 16 + 32 * p);
      const __m128i q1 = load16(b + 32 + 32 * p);
      w.q[4 * p + 0] = _mm_and_si128(q0, m4);
      w.q[4 * p + 1] = _mm_and_si128(q1, m4);
      w.q[4 * p + 2] = _mm_and_si128(_mm_srli_epi16(q0, 4), m4);
      w.q[4 * p + 3] = _mm_and_si128(_mm_srli_epi16(q1, 4), m4);
    }
  }
  static void dot(const W& w, const Act& a, __m128& acc, float& macc) {
    const auto* x = reinterpret_cast<const __m128i*>(a.qs);
    __m128i lanes = _mm_setzero_si128();
    for (int j = 0; j < 8; ++j) {
      const __m128i p = _mm_add_epi16(_mm_maddubs_epi16(w.q[2 * j], _mm_load_si128(x + 2 * j)),
                                      _mm_maddubs_epi16(w.q[2 * j + 1], _mm_load_si128(x + 2 * j + 1)));
      lanes = _mm_add_epi32(lanes, _mm_madd_epi16(p, w.sc[j]));
    }
    scale_add(acc, lanes, w.d, a.d);
    const int32_t mins = bsums_dot(a, w.mins_lo, w.mins_hi);
    macc = macc + static_cast<float>(-mins) * (w.dmin * a.d);
  }
};

struct Q6_K {
  using Act = ActQ8x256;
  struct W {
    __m128i q[16];   // 16-element chunks in element order (unsigned 0..63)
    __m128i sc[16];  // each chunk's scale in every int16
    __m128i sc_lo, sc_hi;  // the 16 scales as int16
    __m128 d;
  };
  static constexpr size_t kBytes = 210;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b + 208));
    const __m128i scales = load16(b + 192);
    w.sc_lo = _mm_cvtepi8_epi16(scales);
    w.sc_hi = _mm_cvtepi8_epi16(_mm_srli_si128(scales, 8));
    for (int j = 0; j < 8; ++j) {
      w.sc[j] = broadcast_i16(w.sc_lo, j);
      w.sc[j + 8] = broadcast_i16(w.sc_hi, j);
    }
    const __m128i m4 = _mm_set1_epi8(0xF);
    const __m128i m30 = _mm_set1_epi8(0x30);
    for (int n = 0; n < 2; ++n) {
      const uint8_t* ql = b + 64 * n;
      const uint8_t* qh = b + 128 + 32 * n;
      const __m128i l0 = load16(ql), l1 = load16(ql + 16), l2 = load16(ql + 32), l3 = load16(ql + 48);
      const __m128i h0 = load16(qh), h1 = load16(qh + 16);
      // High bits 2c, 2c+1 of qh moved to bits 4, 5 (16-bit shifts; the mask drops what crossed bytes).
      const __m128i h0c0 = _mm_and_si128(_mm_slli_epi16(h0, 4), m30), h1c0 = _mm_and_si128(_mm_slli_epi16(h1, 4), m30);
      const __m128i h0c1 = _mm_and_si128(_mm_slli_epi16(h0, 2), m30), h1c1 = _mm_and_si128(_mm_slli_epi16(h1, 2), m30);
      const __m128i h0c2 = _mm_and_si128(h0, m30), h1c2 = _mm_and_si128(h1, m30);
      const __m128i h0c3 = _mm_and_si128(_mm_srli_epi16(h0, 2), m30), h1c3 = _mm_and_si128(_mm_srli_epi16(h1, 2), m30);
      __m128i* q = w.q + 8 * n;
      q[0] = _mm_or_si128(_mm_and_si128(l0, m4), h0c0);
      q[1] = _mm_or_si128(_mm_and_si128(l1, m4), h1c0);
      q[2] = _mm_or_si128(_mm_and_si128(l2, m4), h0c1);
      q[3] = _mm_or_si128(_mm_and_si128(l3, m4), h1c1);
      q[4] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(l0, 4), m4), h0c2);
      q[5] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(l1, 4), m4), h1c2);
      q[6] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(l2, 4), m4), h0c3);
      q[7] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(l3, 4), m4), h1c3);
    }
  }
  static void dot(const W& w, const Act& a, __m128& acc, float&) {
    const auto* x = reinterpret_cast<const __m128i*>(a.qs);
    __m128i lanes = _mm_setzero_si128();
    for (int c = 0; c < 16; ++c) {
      // A pair is at most 2 * 63 * 127 < 2^15.
      lanes = _mm_add_epi32(lanes, _mm_madd_epi16(_mm_maddubs_epi16(w.q[c], _mm_load_si128(x + c)), w.sc[c]));
    }
    const int32_t corr = bsums_dot(a, w.sc_lo, w.sc_hi);
    lanes = _mm_sub_epi32(lanes, _mm_cvtsi32_si128(corr * 32));
    scale_add(acc, lanes, w.d, a.d);
  }
};

// Q5_K: Q4_K with a fifth bit, bit j of qh[l] for element l of sub-block j.
struct Q5_K {
  using Act = ActQ8x256;
  using W = Q4_K::W;
  static constexpr size_t kBytes = 176;
  static void load(const uint8_t* b, W& w) {
    Q4_K::load_scales(b, w);
    const __m128i m4 = _mm_set1_epi8(0xF);
    const __m128i one = _mm_set1_epi8(1);
    const __m128i h0 = load16(b + 16), h1 = load16(b + 32);
    for (int p = 0; p < 4; ++p) {
      const __m128i q0 = load16(b + 48 + 32 * p);
      const __m128i q1 = load16(b + 64 + 32 * p);
      // Bit j of each byte to bit 4 (a 16-bit shift; the mask keeps each byte's own bit).
      const int j0 = 2 * p, j1 = 2 * p + 1;
      const __m128i b00 = _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(h0, j0), one), 4);
      const __m128i b01 = _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(h1, j0), one), 4);
      const __m128i b10 = _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(h0, j1), one), 4);
      const __m128i b11 = _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(h1, j1), one), 4);
      w.q[4 * p + 0] = _mm_or_si128(_mm_and_si128(q0, m4), b00);
      w.q[4 * p + 1] = _mm_or_si128(_mm_and_si128(q1, m4), b01);
      w.q[4 * p + 2] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q0, 4), m4), b10);
      w.q[4 * p + 3] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q1, 4), m4), b11);
    }
  }
  static void dot(const W& w, const Act& a, __m128& acc, float& macc) { Q4_K::dot(w, a, acc, macc); }
};

// Q2_K and Q3_K: 16-element chunks c = 8n + 2j + h (element order), bits 2j.. of qs[32n + 16h + l].
struct Q2_K {
  using Act = ActQ8x256;
  struct W {
    __m128i q[16];  // unsigned 0..3
    __m128i sc[16];
    __m128i mins_lo, mins_hi;
    __m128 d;
    float dmin;
  };
  static constexpr size_t kBytes = 84;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b + 80));
    w.dmin = half(b + 82);
    const __m128i packed = load16(b);
    const __m128i m4 = _mm_set1_epi8(0xF);
    const __m128i mins = _mm_and_si128(_mm_srli_epi16(packed, 4), m4);
    w.mins_lo = _mm_cvtepu8_epi16(mins);
    w.mins_hi = _mm_cvtepu8_epi16(_mm_srli_si128(mins, 8));
    for (int c = 0; c < 16; ++c) w.sc[c] = _mm_set1_epi16(static_cast<int16_t>(b[c] & 0xF));
    const __m128i m3 = _mm_set1_epi8(3);
    for (int n = 0; n < 2; ++n) {
      const __m128i q0 = load16(b + 16 + 32 * n), q1 = load16(b + 32 + 32 * n);
      for (int j = 0; j < 4; ++j) {
        w.q[8 * n + 2 * j] = _mm_and_si128(_mm_srli_epi16(q0, 2 * j), m3);
        w.q[8 * n + 2 * j + 1] = _mm_and_si128(_mm_srli_epi16(q1, 2 * j), m3);
      }
    }
  }
  static void dot(const W& w, const Act& a, __m128& acc, float& macc) {
    const auto* x = reinterpret_cast<const __m128i*>(a.qs);
    __m128i lanes = _mm_setzero_si128();
    for (int c = 0; c < 16; ++c) {
      lanes = _mm_add_epi32(lanes, _mm_madd_epi16(_mm_maddubs_epi16(w.q[c], _mm_load_si128(x + c)), w.sc[c]));
    }
    scale_add(acc, lanes, w.d, a.d);
    const int32_t mins = bsums_dot(a, w.mins_lo, w.mins_hi);
    macc = macc + static_cast<float>(-mins) * (w.dmin * a.d);
  }
};

struct Q3_K {
  using Act = ActQ8x256;
  struct W {
    __m128i q[16];  // unsigned 0..7 (weight = scale * (q - 4))
    __m128i sc[16];
    __m128i sc_lo, sc_hi;
    __m128 d;
  };
  static constexpr size_t kBytes = 110;
  static void load(const uint8_t* b, W& w) {
    w.d = _mm_set1_ps(half(b + 108));
    int scales[16];
    util::q3_k_scales(b + 96, scales);
    int16_t sc16[16];
    for (int c = 0; c < 16; ++c) {
      sc16[c] = static_cast<int16_t>(scales[c]);
      w.sc[c] = _mm_set1_epi16(sc16[c]);
    }
    w.sc_lo = load16(sc16);
    w.sc_hi = load16(sc16 + 8);
    const __m128i m3 = _mm_set1_epi8(3);
    const __m128i one = _mm_set1_epi8(1);
    const __m128i hm0 = load16(b), hm1 = load16(b + 16);
    for (int n = 0; n < 2; ++n) {
      const __m128i q0 = load16(b + 32 + 32 * n), q1 = load16(b + 48 + 32 * n);
      for (int j = 0; j < 4; ++j) {
        const int bit = 4 * n + j;
        const __m128i h0 = _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hm0, bit), one), 2);
        const __m128i h1 = _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hm1, bit), one), 2);
        w.q[8 * n + 2 * j] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q0, 2 * j), m3), h0);
        w.q[8 * n + 2 * j + 1] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q1, 2 * j), m3), h1);
      }
    }
  }
  static void dot(const W& w, const Act& a, __m128& acc, float&) {
    const auto* x = reinterpret_cast<const __m128i*>(a.qs);
    __m128i lanes = _mm_setzero_si128();
    for (int c = 0; c < 16; ++c) {
      lanes = _mm_add_epi32(lanes, _mm_madd_epi16(_mm_maddubs_epi16(w.q[c], _mm_load_si128(x + c)), w.sc[c]));
    }
    const int32_t corr = bsums_dot(a, w.sc_lo, w.sc_hi);
    scale_add(acc, _mm_sub_epi32(lanes, _mm_cvtsi32_si128(corr * 4)), w.d, a.d);
  }
};

#include "engine/cpu/quant/x86_driver.inc"
#include "engine/cpu/quant/avx_float_pairs.inc"
#include "engine/cpu/quant/avx_kquant_tiles.inc"

}  // namespace

void add_avx_kernels(KernelTable& table) {
  table.gemm[2] = pairs_gemm<Q4_0>;
  table.gemm[3] = pairs_gemm<Q4_1>;
  table.gemm[6] = pairs_gemm<Q5_0>;
  table.gemm[7] = pairs_gemm<Q5_1>;
  table.gemm[8] = pairs_gemm<Q8_0>;
  table.gemm[39] = pairs_gemm<MXFP4>;
  table.one_token[2] = matvec<Q4_0>;
  table.one_token[3] = matvec<Q4_1>;
  table.one_token[6] = matvec<Q5_0>;
  table.one_token[7] = matvec<Q5_1>;
  table.one_token[39] = matvec<MXFP4>;
  table.gemm[20] = pairs_gemm<IQ4_NL>;
  table.one_token[20] = matvec<IQ4_NL>;
  table.gemm[23] = k_gemm<IQ4_XSRow>;
  // One Q8_0 token (34-byte blocks) reads memory near the core's limit as one stream of rows; four
  // rows side by side read it slower (0.85x from memory, though 1.1x in cache; no one_token entry).
  table.gemm[10] = gemm<Q2_K>;
  table.gemm[11] = gemm<Q3_K>;
  table.gemm[12] = k_gemm<Q4_KRow<Q4_K>>;
  table.gemm[13] = k_gemm<Q4_KRow<Q5_K>>;
  table.gemm[14] = k_gemm<Q6_KRow>;
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
