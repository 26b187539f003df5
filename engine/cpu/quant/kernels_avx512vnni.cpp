// The 512-bit level (AVX-512 F/BW/VL with VNNI): four neighbouring rows side by side, row i's
// 16-byte chunk of a block in 128-bit lane i of a register, so one vpdpbusd (u8 x s8, four products
// summed into each int32) or one vpmaddubsw + vpdpwssd does four rows at once. In a 128-bit lane,
// int32 j collects elements 4j..4j+3 of the chunk: the chunks of elements 0..15 and of 16..31 of a
// 32-element group accumulated into the same register give exactly row i's 4 lanes of the lane
// convention (kernels.h; integer sums are exact whatever their order), with no fold. The float
// steps then run on 16 floats: row i's 4 lanes at 4i..4i+3 (its min term in all four), the
// convention's operations per element, so every output gets the bits of every other level. A row
// group's block is unpacked once for up to 16 tokens; a group past the last row repeats the last
// row and its outputs are not stored. Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4 and IQ4_NL follow "block
// sums" at this level instead (kernels_avx512vnni_block_sums.cpp).
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernel_util.h"
#include "engine/cpu/quant/kernels.h"
#include "engine/gguf/iq4_values.h"

// Everything below is compiled for this level's target (kernels.h: nothing here is shared).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")
// GCC 12's AVX-512 headers start many intrinsics from a self-initialized "undefined" register,
// which -Wmaybe-uninitialized reports once they are inlined here (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"  // the same, as -O1 (the ASan build) reports it
#endif

namespace vks::cpuq {
namespace {

#include "engine/cpu/quant/x86_helpers.inc"

constexpr int kRows = 4;       // rows per register (one per 128-bit lane)

// The K-quants' block loads and dots are inlined into their tiles, where the compiler otherwise
// made them calls: a block then went through memory even for one token, which reads it once.
#define VKS_INLINE __attribute__((always_inline)) inline

// Row i's 16 bytes at rows[i] + off, in 128-bit lane i.
inline __m512i rows16(const uint8_t* const* rows, size_t off) {
  __m512i v = _mm512_castsi128_si512(load16(rows[0] + off));
  v = _mm512_inserti32x4(v, load16(rows[1] + off), 1);
  v = _mm512_inserti32x4(v, load16(rows[2] + off), 2);
  return _mm512_inserti32x4(v, load16(rows[3] + off), 3);
}

// The four rows' block scales (halves at rows[i] + off), row i's in floats 4i..4i+3.
inline __m512 row_scales(const uint8_t* const* rows, size_t off) {
  const uint64_t h = static_cast<uint64_t>(load_u16(rows[0] + off)) |
                     static_cast<uint64_t>(load_u16(rows[1] + off)) << 16 |
                     static_cast<uint64_t>(load_u16(rows[2] + off)) << 32 |
                     static_cast<uint64_t>(load_u16(rows[3] + off)) << 48;
  const __m128 d = _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(h)));
  const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  return _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(d));
}

// The half in the low 16 bits of int32 0 of each 128-bit lane, as a float in all four of its lanes.
inline __m512 lane_halves(__m512i v) {
  const __m512i first = _mm512_shuffle_epi32(v, _MM_PERM_AAAA);
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(first));
}

// 16 bytes in every 128-bit lane (one token's chunk, shared by the four rows).
inline __m512i every_lane(const void* p) { return _mm512_broadcast_i32x4(load16(p)); }

// Int16 j of each 128-bit lane in all eight of its int16.
inline __m512i lane_i16(__m512i v, int j) {
  return _mm512_shuffle_epi8(v, _mm512_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * j)));
}

// The sum of each 128-bit lane's four int32, in all four.
inline __m512i lane_sums(__m512i v) {
  v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_BADC));
  return _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
}

// acc = acc + float(L) * (d_w * d_x): the convention's float step, per element.
inline void scale_add(__m512& acc, __m512i lanes, __m512 d_w, float d_x) {
  acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(lanes), _mm512_mul_ps(d_w, _mm512_set1_ps(d_x))));
}

// The min term's sums start from kFloatBias (1.5 * 2^23 as a float's bits), so that the finished
// sums, read as floats, are 1.5 * 2^23 + S exactly (|S| < 2^22); subtracting 1.5 * 2^23 then gives
// float(S) exactly, cvtdq2ps's bits, on either 512-bit port where vcvtdq2ps and vpdpbusd share one.
constexpr int32_t kFloatBias = kActFloatBias;
// Sums S (|S| < 2^22) that started from kFloatBias, as the floats float(S), exactly.
inline __m512 unbias(__m512i biased_lanes) {
  return _mm512_sub_ps(_mm512_castsi512_ps(biased_lanes), _mm512_set1_ps(kActFloatBiasValue));
}

// The activations' 16 block sums against each row's 16 int16 factors (f_lo: sub-blocks 0..7,
// f_hi: 8..15, in the row's lane), summed per row into all four of its int32.
inline __m512i bsums_dot(const ActQ8x256& a, __m512i f_lo, __m512i f_hi) {
  __m512i s = _mm512_dpwssd_epi32(_mm512_setzero_si512(), every_lane(a.bsums), f_lo);
  return lane_sums(_mm512_dpwssd_epi32(s, every_lane(a.bsums + 8), f_hi));
}

// ---- K-quants (256-element blocks) ----
// A K-quant block unpacked takes 20-35 registers, so a tile of more tokens than one group keeps it
// in memory (the tile's stack buffer, in L1), and each 32-element group's weights are loaded once
// for a group of up to kGroup tokens, whose integer lanes sum in registers of their own:
// independent chains the core interleaves. Held in registers beside the tokens' accumulators, the
// block's scales and the accumulators went to the stack anyway, and one token's chain of 8-16
// dependent vpdpwssd per block left the core waiting on their latency.

struct Q4_Kx4 {
  using Act = ActQ8x256;
  static constexpr size_t kBytes = 144;
  static constexpr int kMaxTokens = 16;
  static constexpr int kGroup = 8;  // one group up to 8 tokens measured faster than 4 + 4 (5-8 tokens: 1.1-1.2x)
  struct W {
    __m512i q[8][2];           // sub-block j's elements 0..15 and 16..31, unsigned 0..15
    __m512i sc[8];             // scale j of each row, zero-extended into every int32 of its lane
    __m512i mins_lo, mins_hi;  // each min twice, as int16 (one per 16-element block sum)
    __m512 d, dmin;
  };
  // llama.cpp's utmp unpacking of the 12 scale bytes (x86_helpers.inc's k4_scales_mins), on the
  // int32 1..3 of each lane: [u0 & k1, (u2 & k2) | ((u0 >> 6) & k3) << 4, u1 & k1,
  // ((u2 >> 4) & k2) | ((u1 >> 6) & k3) << 4]. Per row: bytes 0..7 the 8 scales, 8..15 the 8 mins.
  static __m512i scales_mins(__m512i head) {
    const __m512i u = _mm512_shuffle_epi32(head, _MM_PERM_DCDB);   // [u0, u2, u1, u2]
    const __m512i hi = _mm512_shuffle_epi32(head, _MM_PERM_CBBB);  // [_, u0, _, u1]
    const __m512i low6 = _mm512_set1_epi32(0x3f3f3f3f), low4 = _mm512_set1_epi32(0x0f0f0f0f);
    const __m512i mask_a = _mm512_mask_blend_epi32(0xAAAA, low6, low4);
    const __m512i part1 = _mm512_and_si512(_mm512_srlv_epi32(u, _mm512_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4)), mask_a);
    const __m512i top2 = _mm512_maskz_mov_epi32(0xAAAA, _mm512_set1_epi32(0x03030303));
    const __m512i part2 = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hi, 6), top2), 4);
    return _mm512_or_si512(part1, part2);
  }
  VKS_INLINE static void load(const uint8_t* const* rows, size_t off, W& w) {
    const __m512i head = rows16(rows, off);  // d, dmin and the 12 scale bytes of each row
    w.d = lane_halves(head);
    w.dmin = lane_halves(_mm512_srli_epi32(head, 16));
    const __m512i scales_mins4 = scales_mins(head);
    for (int j = 0; j < 8; ++j) {
      w.sc[j] = _mm512_shuffle_epi8(scales_mins4, _mm512_set1_epi32(static_cast<int32_t>(0x80808000u | j)));
    }
    // int16 k of mins_lo: min k / 2 (byte 8 + k / 2), of mins_hi: min 4 + k / 2; high bytes zero.
    const __m512i zero_hi = _mm512_set1_epi16(static_cast<int16_t>(0x8000));
    w.mins_lo = _mm512_shuffle_epi8(scales_mins4, _mm512_or_si512(zero_hi, _mm512_broadcast_i32x4(
                                                      _mm_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11))));
    w.mins_hi = _mm512_shuffle_epi8(scales_mins4, _mm512_or_si512(zero_hi, _mm512_broadcast_i32x4(
                                                      _mm_setr_epi16(12, 12, 13, 13, 14, 14, 15, 15))));
    const __m512i m4 = _mm512_set1_epi8(0xF);
    for (int p = 0; p < 4; ++p) {
      const __m512i lo = rows16(rows, off + 16 + 32 * p);
      const __m512i hi = rows16(rows, off + 32 + 32 * p);
      w.q[2 * p][0] = _mm512_and_si512(lo, m4);
      w.q[2 * p][1] = _mm512_and_si512(hi, m4);
      w.q[2 * p + 1][0] = _mm512_and_si512(_mm512_srli_epi16(lo, 4), m4);
      w.q[2 * p + 1][1] = _mm512_and_si512(_mm512_srli_epi16(hi, 4), m4);
    }
  }
  // Per group j and token: two vpdpbusd give the group's products four to an int32 (at most
  // 8 * 15 * 127 < 2^15, so the int32 is its own low int16 sign-extended), and one vpdpwssd against
  // the scale in the low int16 (the high one zero) adds scale * that into the lanes: three
  // instructions where maddubs + maddubs + add + vpdpwssd took four.
  template <int G>
  VKS_INLINE static void dot(const W& w, const Act* const* x, __m512* acc, __m512* macc) {
    __m512i l[G];
    for (int g = 0; g < G; ++g) l[g] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m512i lo = w.q[j][0], hi = w.q[j][1];
      for (int g = 0; g < G; ++g) {
        __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, every_lane(x[g]->qs + 32 * j));
        p = _mm512_dpbusd_epi32(p, hi, every_lane(x[g]->qs + 32 * j + 16));
        l[g] = _mm512_dpwssd_epi32(l[g], p, w.sc[j]);
      }
    }
    // The min term: sum of min * bsum (|S| < 63 * 16 * 2032 < 2^22) started from kFloatBias in
    // one lane of each row, so that after lane_sums every lane reads as 1.5 * 2^23 + S; and
    // macc - float(S) * f is macc + float(-S) * f bit for bit (IEEE subtraction adds the negation).
    const __m512i bias0 = _mm512_maskz_mov_epi32(0x1111, _mm512_set1_epi32(kFloatBias));
    for (int g = 0; g < G; ++g) {
      const float d_x = x[g]->d;
      scale_add(acc[g], l[g], w.d, d_x);
      __m512i s = _mm512_dpwssd_epi32(bias0, every_lane(x[g]->bsums), w.mins_lo);
      s = lane_sums(_mm512_dpwssd_epi32(s, every_lane(x[g]->bsums + 8), w.mins_hi));
      macc[g] = _mm512_sub_ps(macc[g], _mm512_mul_ps(unbias(s), _mm512_mul_ps(w.dmin, _mm512_set1_ps(d_x))));
    }
  }
};

struct Q6_Kx4 {
  using Act = ActQ8x256;
  static constexpr size_t kBytes = 210;
  static constexpr int kMaxTokens = 16;
  static constexpr int kGroup = 4;
  struct W {
    __m512i q[8][2];         // elements 32i..32i+15 and 32i+16..32i+31, unsigned 0..63
    __m512i sc[16];          // signed scale s of each row in every int16 of its lane
    __m512i sc32_lo, sc32_hi;  // 32 times the 16 scales as int16: sub-blocks 0..7 and 8..15
    __m512 d;
  };
  VKS_INLINE static void load(const uint8_t* const* rows, size_t off, W& w) {
    w.d = row_scales(rows, off + 208);
    const __m512i scales = rows16(rows, off + 192);
    const __m512i sc_lo = _mm512_srai_epi16(_mm512_unpacklo_epi8(scales, scales), 8);
    const __m512i sc_hi = _mm512_srai_epi16(_mm512_unpackhi_epi8(scales, scales), 8);
    for (int s = 0; s < 8; ++s) {
      w.sc[s] = lane_i16(sc_lo, s);
      w.sc[8 + s] = lane_i16(sc_hi, s);
    }
    w.sc32_lo = _mm512_slli_epi16(sc_lo, 5);
    w.sc32_hi = _mm512_slli_epi16(sc_hi, 5);
    const __m512i m4 = _mm512_set1_epi8(0xF);
    const __m512i m30 = _mm512_set1_epi8(0x30);
    for (int n = 0; n < 2; ++n) {
      for (int half = 0; half < 2; ++half) {  // bytes 0..15 and 16..31 of each 32-byte run
        const size_t h16 = static_cast<size_t>(16 * half);
        const __m512i l01 = rows16(rows, off + 64 * n + h16);
        const __m512i l23 = rows16(rows, off + 64 * n + 32 + h16);
        const __m512i h = rows16(rows, off + 128 + 32 * n + h16);
        __m512i (*q)[2] = w.q + 4 * n;
        q[0][half] = _mm512_or_si512(_mm512_and_si512(l01, m4), _mm512_and_si512(_mm512_slli_epi16(h, 4), m30));
        q[1][half] = _mm512_or_si512(_mm512_and_si512(l23, m4), _mm512_and_si512(_mm512_slli_epi16(h, 2), m30));
        q[2][half] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l01, 4), m4), _mm512_and_si512(h, m30));
        q[3][half] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l23, 4), m4),
                                     _mm512_and_si512(_mm512_srli_epi16(h, 2), m30));
      }
    }
  }
  // Two chains per token (sub-blocks 2i and 2i + 1), added once per block: integer sums are exact.
  // The -32 offset: 32 * sum of scale * block sum, subtracted from lane 0 of each row.
  template <int G>
  VKS_INLINE static void dot(const W& w, const Act* const* x, __m512* acc, __m512*) {
    __m512i l0[G], l1[G];
    for (int g = 0; g < G; ++g) l0[g] = l1[g] = _mm512_setzero_si512();
    for (int i = 0; i < 8; ++i) {
      const __m512i lo = w.q[i][0], hi = w.q[i][1];
      for (int g = 0; g < G; ++g) {
        l0[g] = _mm512_dpwssd_epi32(l0[g], _mm512_maddubs_epi16(lo, every_lane(x[g]->qs + 32 * i)), w.sc[2 * i]);
        l1[g] = _mm512_dpwssd_epi32(l1[g], _mm512_maddubs_epi16(hi, every_lane(x[g]->qs + 32 * i + 16)), w.sc[2 * i + 1]);
      }
    }
    for (int g = 0; g < G; ++g) {
      const __m512i corr = bsums_dot(*x[g], w.sc32_lo, w.sc32_hi);
      __m512i l = _mm512_add_epi32(l0[g], l1[g]);
      l = _mm512_mask_sub_epi32(l, 0x1111, l, corr);
      scale_add(acc[g], l, w.d, x[g]->d);
    }
  }
};

// ---- IQ4_XS: signed values looked up from the indices (IQ4_NL follows block sums here) ----
// The products are signed x signed: maddubs takes each weight's magnitude and the activation with
// the weight's sign (a masked negation, AVX-512 having no vpsignb); a pair reaches 2 * 127 * 127 <
// 2^15, exact. vpdpwssd then adds the pairs times the sub-block's scale in both int16 of an int32
// into the lanes: each lane gets its four elements' products, the convention's lanes with no offset
// correction.

// The 16 values (ggml's kvalues_iq4nl) in every 128-bit lane, for vpshufb.
inline __m512i iq4_table() {
  return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(iq4::kValues)));
}

// A 32-element group of the four rows (their 16 index bytes at rows[i] + off) as magnitudes and
// sign masks: [0] elements 0..15, [1] 16..31.
struct Iq4Group {
  __m512i mag[2];
  __mmask64 neg[2];
};
VKS_INLINE void load_iq4_group(const uint8_t* const* rows, size_t off, __m512i table, Iq4Group& g) {
  const __m512i q = rows16(rows, off);
  const __m512i m4 = _mm512_set1_epi8(0xF);
  const __m512i v[2] = {_mm512_shuffle_epi8(table, _mm512_and_si512(q, m4)),
                        _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(q, 4), m4))};
  for (int h = 0; h < 2; ++h) {
    g.mag[h] = _mm512_abs_epi8(v[h]);
    g.neg[h] = _mm512_movepi8_mask(v[h]);
  }
}
// lanes + scale * (the group's products with the token's 32 activations at x), per lane.
VKS_INLINE __m512i iq4_group_dot(__m512i lanes, const Iq4Group& g, const int8_t* x, __m512i scale) {
  for (int h = 0; h < 2; ++h) {
    const __m512i xv = every_lane(x + 16 * h);
    const __m512i signed_x = _mm512_mask_sub_epi8(xv, g.neg[h], _mm512_setzero_si512(), xv);
    lanes = _mm512_dpwssd_epi32(lanes, _mm512_maddubs_epi16(g.mag[h], signed_x), scale);
  }
  return lanes;
}

struct IQ4_XSx4 {
  using Act = ActQ8x256;
  static constexpr size_t kBytes = 136;
  static constexpr int kMaxTokens = 16;
  static constexpr int kGroup = 4;
  struct W {
    Iq4Group g[8];
    __m512i sc[8];  // sub-block j's scale ls - 32 of each row in every int16 of its lane
    __m512 d;
  };
  VKS_INLINE static void load(const uint8_t* const* rows, size_t off, W& w) {
    const __m512i head = rows16(rows, off);  // d, scales_h, scales_l and 8 index bytes of each row
    w.d = lane_halves(head);
    const __m512i scales = scales_of(head);
    const __m512i table = iq4_table();
    for (int j = 0; j < 8; ++j) {
      w.sc[j] = lane_i16(scales, j);
      load_iq4_group(rows, off + 8 + 16 * static_cast<size_t>(j), table, w.g[j]);
    }
  }
  // Int16 j (0..7) of each lane: sub-block j's ls - 32 (quant_blocks.h), its low 4 bits the
  // nibble j % 2 of scales_l[j / 2] (byte 4 + j / 2), its high 2 bits at bit 2j of scales_h
  // (bytes 2..3): each int16 gathers its bytes, shifts by its own amount and masks. Four rows at
  // once from the bytes load() already holds: x86_helpers.inc's iq4_xs_scales a row at a time
  // decoded TinyLlama-shape IQ4_XS at 0.90-0.97x this speed (vks_bench_cpu_reference -t 1 -p 128
  // -n 32 -s 8 -r 1, three alternating rounds).
  static __m512i scales_of(__m512i head) {
    const __m512i low_bytes = _mm512_shuffle_epi8(
        head, _mm512_broadcast_i32x4(_mm_setr_epi8(4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1)));
    const __m512i low = _mm512_and_si512(
        _mm512_srlv_epi16(low_bytes, _mm512_broadcast_i32x4(_mm_setr_epi16(0, 4, 0, 4, 0, 4, 0, 4))),
        _mm512_set1_epi16(0xF));
    const __m512i high_word = _mm512_shuffle_epi8(
        head, _mm512_broadcast_i32x4(_mm_setr_epi8(2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3)));
    const __m512i high = _mm512_and_si512(
        _mm512_srlv_epi16(high_word, _mm512_broadcast_i32x4(_mm_setr_epi16(0, 2, 4, 6, 8, 10, 12, 14))),
        _mm512_set1_epi16(3));
    return _mm512_sub_epi16(_mm512_or_si512(low, _mm512_slli_epi16(high, 4)), _mm512_set1_epi16(32));
  }
  template <int G>
  VKS_INLINE static void dot(const W& w, const Act* const* x, __m512* acc, __m512*) {
    __m512i l[G];
    for (int g = 0; g < G; ++g) l[g] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      for (int g = 0; g < G; ++g) l[g] = iq4_group_dot(l[g], w.g[j], x[g]->qs + 32 * j, w.sc[j]);
    }
    for (int g = 0; g < G; ++g) scale_add(acc[g], l[g], w.d, x[g]->d);
  }
};

// Reading four rows side by side makes four short streams, which the hardware prefetchers follow
// badly (a one-token Q4_0 matvec from memory ran at 0.65x the one-row AVX2 kernel). So each block
// step also prefetches its share of the next row group's bytes, one contiguous range: the memory
// sees a single sequential stream one group ahead (the matvec then ran at 1.4x AVX2's).
template <class K>
inline constexpr size_t kGroupStep = kRows * K::kBytes;  // bytes of a row group per block step

// The tokens [T0, NT) of a block step in groups of at most K::kGroup, as even as possible (7: 4 + 3).
template <class K, int NT, int T0 = 0>
VKS_INLINE void dot_groups(const typename K::W& w, const typename K::Act* const* a, size_t b, __m512* acc, __m512* macc) {
  if constexpr (T0 < NT) {
    constexpr int kLeft = NT - T0;
    constexpr int kGroups = (kLeft + K::kGroup - 1) / K::kGroup;
    constexpr int G = (kLeft + kGroups - 1) / kGroups;
    const typename K::Act* x[G];
    for (int g = 0; g < G; ++g) x[g] = a[T0 + g] + b;
    K::template dot<G>(w, x, acc + T0, macc + T0);
    dot_groups<K, NT, T0 + G>(w, a, b, acc, macc);
  }
}

// Four rows (rows[i] -> y[i], the first n_valid stored) for NT tokens; ahead: the next row group's
// first byte (null for none).
template <class K, int NT>
void tile(const uint8_t* const* rows, const uint8_t* ahead, const typename K::Act* const* a, size_t n_blocks,
          float* y, size_t y_stride, size_t n_valid) {
  constexpr bool kGrouped = requires { K::kGroup; };
  alignas(64) typename K::W wb;
  __m512 acc[NT], macc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = macc[t] = _mm512_setzero_ps();
  for (size_t b = 0; b < n_blocks; ++b) {
    if (ahead != nullptr) util::prefetch_range<util::PrefetchTo::kL1>(ahead + b * kGroupStep<K>, kGroupStep<K>);
    K::load(rows, b * K::kBytes, wb);
    if constexpr (kGrouped) {
      // Through a pointer the compiler cannot follow: the block stays in wb and each group
      // rereads it from L1, rather than being held in registers across the groups.
      const typename K::W* w = &wb;
      if constexpr (NT > K::kGroup) asm("" : "+r"(w));
      dot_groups<K, NT>(*w, a, b, acc, macc);
    } else {
      for (int t = 0; t < NT; ++t) K::dot(wb, a[t][b], acc[t], macc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    float lanes[16], mins[16];
    _mm512_storeu_ps(lanes, acc[t]);
    _mm512_storeu_ps(mins, macc[t]);
    for (size_t i = 0; i < n_valid; ++i) {
      y[static_cast<size_t>(t) * y_stride + i] = util::finish(lanes + 4 * i, mins[4 * i]);
    }
  }
}

template <class K, int NT>
void row_groups(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                size_t n_blocks, float* y, size_t y_stride) {
  using Act = typename K::Act;
  const Act* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const Act*>(act + static_cast<size_t>(t) * act_stride);
  for (size_t r = 0; r < n_rows; r += kRows) {
    const uint8_t* rows[kRows];
    for (int i = 0; i < kRows; ++i) rows[i] = w + std::min(r + static_cast<size_t>(i), n_rows - 1) * w_stride;
    const uint8_t* ahead = r + 2 * kRows <= n_rows ? w + (r + kRows) * w_stride : nullptr;
    tile<K, NT>(rows, ahead, a, n_blocks, y + r, y_stride, std::min<size_t>(kRows, n_rows - r));
  }
}

// n_tokens (< K::kMaxTokens) tokens at once: the tile for exactly that many.
template <class K, int NT>
void few_tokens(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  if constexpr (NT > 0) {
    if (n_tokens == NT) {
      row_groups<K, NT>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride);
    } else {
      few_tokens<K, NT - 1>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
    }
  }
}

template <class K>
void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, size_t n_tokens,
          size_t n_blocks, float* y, size_t y_stride) {
  size_t t0 = 0;
  for (; t0 + K::kMaxTokens <= n_tokens; t0 += K::kMaxTokens) {
    row_groups<K, K::kMaxTokens>(w, w_stride, n_rows, act + t0 * act_stride, act_stride, n_blocks, y + t0 * y_stride,
                              y_stride);
  }
  if (t0 < n_tokens) {
    few_tokens<K, K::kMaxTokens - 1>(w, w_stride, n_rows, act + t0 * act_stride, act_stride, n_tokens - t0, n_blocks,
                                  y + t0 * y_stride, y_stride);
  }
}

}  // namespace

void add_avx512vnni_kernels(KernelTable& table) {
  table.quantize_q8x32 = quantize_act_q8x32_avx512;
  table.quantize_q8x256 = quantize_act_q8x256_avx512;
  add_avx512vnni_block_sums_kernels(table);  // Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4 and IQ4_NL
  table.gemm[12] = gemm<Q4_Kx4>;
  table.gemm[14] = gemm<Q6_Kx4>;
  table.gemm[23] = gemm<IQ4_XSx4>;
  add_avx512vnni_q4k_q5k_packed_kernels(table);
  add_avx512vnni_q6k_packed_kernels(table);
}

}  // namespace vks::cpuq

#undef VKS_INLINE

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
