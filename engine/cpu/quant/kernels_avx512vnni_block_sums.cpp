// The avx512vnni level's Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4 and IQ4_NL, under the "block sums"
// convention (kernels.h), on GGUF rows and on rows packed in groups of 16 (packed_rows.h): vpdpbusd on 16 rows
// at once, the weights in the VNNI order (register k: dword k, elements 4k..4k+3, of each of the 16
// rows), so that eight vpdpbusd against a token's eight dwords broadcast leave S_b of the 16 rows in
// one register, with no lanes to add across, and the float step runs once per 16 rows, token and
// block. The lane convention's four lanes per row cost four times that float step, which bounded
// this level's GEMM (TinyLlama Q4_0 prefill at 0.94-0.97x llama.cpp on an AVX-512 VNNI CPU without
// AMX).
//
// Every token count runs here, in passes of a few tokens per weight load; the amx level's tiles
// (kernels_amx.cpp, kernels_amx_packed.cpp) hand these the tokens below a tile, so both levels
// give the same bits.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernel_util.h"
#include "engine/cpu/quant/kernels.h"
#include "engine/cpu/quant/qmatmul.h"  // QmatmulScratch: per-thread buffers that only grow
#include "engine/gguf/iq4_values.h"
#include "engine/gguf/mxfp4_codes.h"

// Everything below is compiled for this level's target (kernels.h: nothing here is shared).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")
// GCC 12's AVX-512 headers (see kernels_avx512vnni.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace vks::cpuq {
namespace {

constexpr size_t kGroupRows = 16;

// vpdpbusd wants one operand unsigned, so every type's weights are used unsigned and biased:
// Q4_0's nibbles as stored (q = w + 8), Q8_0's bytes ^ 0x80 (q = w + 128), MXFP4's doubled values
// looked up with 12 added (q = w + 12, 0..24), IQ4_NL's values looked up with 128 added (q = w +
// 128, 1..241: eight vpdpbusd of them stay far inside int32); the bias times the token's block sum
// is its offset, where a token's sum starts. kQuantsAt: where a block's quants start; scales(): the 16 rows' block
// scales from the 32 bits at each row's block start (RowDwords).
// kMin: the type adds m_w * s_x per block (Q4_1, Q5_1; mins() gives the 16 rows' m_w from the same
// 32 bits as scales()); kFifthBitsAt: where a Q5 block's 32 fifth bits lie (0: none).
inline __m512 half_scales(__m512i raw) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(raw)); }
struct NoMinNoFifthBits {
  static constexpr bool kMin = false;
  static constexpr size_t kFifthBitsAt = 0;
};
struct Q4_0Bs : NoMinNoFifthBits {
  static constexpr size_t kBytes = 18, kQuantsAt = 2;
  static __m512 scales(__m512i raw) { return half_scales(raw); }
  static int32_t offset(const ActQ8x32& a) { return a.neg_c8[0]; }  // -8 * sum
  // kStreamedUpTo: the token counts that take few_group_streamed on GGUF rows rather than
  // few_group (measured on the amx level's CPU: two Q4_0 tokens ran at 0.78x the lane-convention
  // kernel in cache streamed, 0.98x not; two Q8_0 tokens from memory 1.03x streamed, 0.96x not).
  static constexpr int kStreamedUpTo = 1;
};
struct Q8_0Bs : NoMinNoFifthBits {
  static constexpr size_t kBytes = 34, kQuantsAt = 2;
  static __m512 scales(__m512i raw) { return half_scales(raw); }
  static int32_t offset(const ActQ8x32& a) { return -128 * a.sum; }
  static constexpr int kStreamedUpTo = 2;
};
// Q4_1, Q5_0 and Q5_1: the nibbles (and fifth bits) as stored, unsigned; Q5_0's bias 16 is its
// offset, Q4_1's and Q5_1's m_w * s_x their min term. Their one-token kernels on GGUF rows read the
// 16 rows side by side (kStreamedUpTo 0): the runner packs these matrices, so GGUF rows are what the
// Vulkan runner's host experts and row counts off the 16-row group read.
struct Q4_1Bs {
  static constexpr size_t kBytes = 20, kQuantsAt = 4, kFifthBitsAt = 0;
  static constexpr bool kMin = true;
  static __m512 scales(__m512i raw) { return half_scales(raw); }
  static __m512 mins(__m512i raw) { return half_scales(_mm512_srli_epi32(raw, 16)); }
  static int32_t offset(const ActQ8x32&) { return 0; }
  static constexpr int kStreamedUpTo = 0;
};
struct Q5_0Bs {
  static constexpr size_t kBytes = 22, kQuantsAt = 6, kFifthBitsAt = 2;
  static constexpr bool kMin = false;
  static __m512 scales(__m512i raw) { return half_scales(raw); }
  static int32_t offset(const ActQ8x32& a) { return -16 * a.sum; }
  static constexpr int kStreamedUpTo = 0;
};
struct Q5_1Bs : Q4_1Bs {
  static constexpr size_t kBytes = 24, kQuantsAt = 8, kFifthBitsAt = 4;
};
// MXFP4: half the E8M0 scale (mxfp4_codes.h's e8m0_half in 16 lanes: 2^(e - 128), subnormal for
// e = 0 and 1).
struct MXFP4Bs : NoMinNoFifthBits {
  static constexpr size_t kBytes = 17, kQuantsAt = 1;
  static __m512 scales(__m512i raw) {
    const __m512i e = _mm512_and_si512(raw, _mm512_set1_epi32(0xFF));
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    const __mmask16 small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
    return _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, subnormal));
  }
  static int32_t offset(const ActQ8x32& a) { return -mxfp4::kBias * a.sum; }
  static const uint8_t* values() { return mxfp4::kBiasedE2M1.data(); }
  static constexpr int kStreamedUpTo = 1;
};

// IQ4_NL: Q4_0's block (a half d, then the nibbles), each nibble an index into ggml's kvalues_iq4nl.
struct IQ4_NLBs : NoMinNoFifthBits {
  static constexpr size_t kBytes = 18, kQuantsAt = 2;
  static __m512 scales(__m512i raw) { return half_scales(raw); }
  static int32_t offset(const ActQ8x32& a) { return -iq4::kBias * a.sum; }
  static const uint8_t* values() { return iq4::kBiasedValues.data(); }
  static constexpr int kStreamedUpTo = 1;
};

// Token a's dword k broadcast. (GCC loads it with a vpbroadcastd of its own rather than as
// vpdpbusd's embedded {1to16} operand; forced by inline asm, that gained 5-10% at 4-7 tokens in
// cache and was mixed at one, within noise, so it is left to the compiler.)
inline __m512i dword_of(const ActQ8x32& a, size_t k) {
  return _mm512_set1_epi32(static_cast<int32_t>(util::load_u32(reinterpret_cast<const uint8_t*>(a.qs) + 4 * k)));
}

// 16 rows side by side are 16 short streams, which the hardware prefetchers follow badly
// (kernels_avx512vnni.cpp): each block step prefetches its share of the next group, one contiguous
// range, so memory sees one sequential stream a group ahead. Into L2 (T1), not L1: a T0 prefetch
// waits for a line fill buffer, and the loads of the rows in flight wait for them too (one-token
// decode, alternating binaries, vks_bench_cpu_reference -p 8 -n 48 -s 1, on the amx level's CPU:
// Q8_0 1.09-1.11x at 1 and 2 threads, Q4_0 1.01x at 1 thread, 1.08x at 2).
inline void prefetch_step(const uint8_t* p, size_t bytes) { util::prefetch_range<util::PrefetchTo::kL2>(p, bytes); }

// Tokens per pass: the accumulators of a pass stay in registers beside a block's eight weight
// registers. On an AMD EPYC (vks_bench_cpu_kernels --packed --packed-tokens 16 128, 5632x2048, two
// rounds) passes of 12 ran Q4_0 at 1.03x and Q8_0 at 0.92-0.95x the speed of 8, passes of 16
// 0.88-1.02x.
constexpr int kPassTokens = 8;

// acc += float(S) * (d_w * d_x): the convention's float step for one token's 16 rows.
inline void scale_add(__m512& acc, __m512i s, __m512 dw, float dx) {
  const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(dx));
  acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(s), scale));
}

// acc += float(S) * (d_w * d_x), then, for a type with mins, acc += m_w * s_x (kernels.h).
template <class F>
inline void block_step(__m512& acc, __m512i s, __m512 dw, __m512 mw, const ActQ8x32& a) {
  scale_add(acc, s, dw, a.d);
  if constexpr (F::kMin) acc = _mm512_add_ps(acc, _mm512_mul_ps(mw, _mm512_set1_ps(a.s)));
}

// Q5's fifth bits: w[k] holds elements 4k..4k+3 of each row (byte i of a dword: element 4k + i),
// qh the rows' 32 fifth bits in the same dword lanes; element e's bit is bit e of qh, so byte
// k / 2 of the row's qh, bit 4 (k % 2) + i. vpshufb spreads that byte over the row's dword,
// vptestmb picks each byte's bit, and a masked add puts 16 on the elements whose bit is set.
inline void add_fifth_bits(__m512i* w, __m512i qh) {
  const __m512i sixteen = _mm512_set1_epi8(16);
  for (size_t k = 0; k < 8; ++k) {
    const int j = static_cast<int>(k / 2);
    const __m512i spread =
        _mm512_shuffle_epi8(qh, _mm512_set_epi8(12 + j, 12 + j, 12 + j, 12 + j, 8 + j, 8 + j, 8 + j, 8 + j, 4 + j,
                                                4 + j, 4 + j, 4 + j, j, j, j, j, 12 + j, 12 + j, 12 + j, 12 + j, 8 + j,
                                                8 + j, 8 + j, 8 + j, 4 + j, 4 + j, 4 + j, 4 + j, j, j, j, j, 12 + j,
                                                12 + j, 12 + j, 12 + j, 8 + j, 8 + j, 8 + j, 8 + j, 4 + j, 4 + j, 4 + j,
                                                4 + j, j, j, j, j, 12 + j, 12 + j, 12 + j, 12 + j, 8 + j, 8 + j, 8 + j,
                                                8 + j, 4 + j, 4 + j, 4 + j, 4 + j, j, j, j, j));
    const __m512i bits = _mm512_set1_epi32(k % 2 == 0 ? 0x08040201 : static_cast<int32_t>(0x80402010u));
    w[k] = _mm512_mask_add_epi8(w[k], _mm512_test_epi8_mask(spread, bits), w[k], sixteen);
  }
}

// S_b of one token against a block's eight weight registers w (w[k] against dword k), its offset
// included. Up to three tokens, two chains per token (one token's eight dependent vpdpbusd would
// wait on their latency); from four on, the tokens' chains are independent enough.
template <int NT>
inline __m512i block_sum(const __m512i* w, const ActQ8x32& a, int32_t offset) {
  if constexpr (NT < 4) {
    __m512i s0 = _mm512_set1_epi32(offset), s1 = _mm512_setzero_si512();
    for (size_t k = 0; k < 8; k += 2) {
      s0 = _mm512_dpbusd_epi32(s0, w[k], dword_of(a, k));
      s1 = _mm512_dpbusd_epi32(s1, w[k + 1], dword_of(a, k + 1));
    }
    return _mm512_add_epi32(s0, s1);
  } else {
    __m512i s = _mm512_set1_epi32(offset);
    for (size_t k = 0; k < 8; ++k) s = _mm512_dpbusd_epi32(s, w[k], dword_of(a, k));
    return s;
  }
}

// ---- GGUF rows ----

inline __m128i load16(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// The 16 rows of a group, stride bytes apart, addressed from two pointers and three multiples of
// the stride (x86 addressing scales the stride by 1, 2, 4 or 8): sixteen row pointers did not fit
// the registers, and moving them in and out of vector registers cost more than the loads.
struct GroupRows {
  const uint8_t* lo;  // row 0
  const uint8_t* hi;  // row 8
  size_t s, s3, s5, s7;
  GroupRows(const uint8_t* g, size_t stride)
      : lo(g), hi(g + 8 * stride), s(stride), s3(3 * stride), s5(5 * stride), s7(7 * stride) {}
  template <size_t R>
  const uint8_t* row(size_t off) const {
    const uint8_t* p = (R < 8 ? lo : hi) + off;
    if constexpr (R % 8 == 0) return p;
    if constexpr (R % 8 == 1) return p + s;
    if constexpr (R % 8 == 2) return p + 2 * s;
    if constexpr (R % 8 == 3) return p + s3;
    if constexpr (R % 8 == 4) return p + 4 * s;
    if constexpr (R % 8 == 5) return p + s5;
    if constexpr (R % 8 == 6) return p + 2 * s3;
    return p + s7;
  }
};

// Rows 4G..4G+3's 16 bytes at off, row 4G + i in 128-bit lane i.
template <size_t G>
inline __m512i rows16(const GroupRows& rows, size_t off) {
  __m512i v = _mm512_castsi128_si512(load16(rows.row<4 * G>(off)));
  v = _mm512_inserti32x4(v, load16(rows.row<4 * G + 1>(off)), 1);
  v = _mm512_inserti32x4(v, load16(rows.row<4 * G + 2>(off)), 2);
  return _mm512_inserti32x4(v, load16(rows.row<4 * G + 3>(off)), 3);
}
// The four row groups' 16 bytes at off: v[g] holds rows 4g..4g+3.
inline void group16(const GroupRows& rows, size_t off, __m512i* v) {
  v[0] = rows16<0>(rows, off);
  v[1] = rows16<1>(rows, off);
  v[2] = rows16<2>(rows, off);
  v[3] = rows16<3>(rows, off);
}

// Row i's 16 bytes at p + i * stride, in 128-bit lane i.
inline __m512i rows4(const uint8_t* p, size_t stride) {
  __m512i v = _mm512_castsi128_si512(load16(p));
  v = _mm512_inserti32x4(v, load16(p + stride), 1);
  v = _mm512_inserti32x4(v, load16(p + 2 * stride), 2);
  return _mm512_inserti32x4(v, load16(p + 3 * stride), 3);
}

// v[g] holding rows 4g..4g+3 in its 128-bit lanes becomes v[k]: dword k of each row, row 4g + i in
// int32 4i + g (a 4 x 4 transpose within each 128-bit lane).
inline void transpose_rows(__m512i* v) {
  const __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]), t1 = _mm512_unpackhi_epi32(v[0], v[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]), t3 = _mm512_unpackhi_epi32(v[2], v[3]);
  v[0] = _mm512_unpacklo_epi64(t0, t2);
  v[1] = _mm512_unpackhi_epi64(t0, t2);
  v[2] = _mm512_unpacklo_epi64(t1, t3);
  v[3] = _mm512_unpackhi_epi64(t1, t3);
}

// One block of 16 GGUF rows (its quants at off in each row) as w[k], against the token's dword k
// (row 4g + i in int32 4i + g); load4: four rows, row i's quants at qs + i * stride in 128-bit lane
// i, lo against the token's bytes 0..15, hi against 16..31.
struct Q4_0Rows : Q4_0Bs {
  static void load(const GroupRows& rows, size_t off, __m512i* w) {
    group16(rows, off, w);
    transpose_rows(w);
    const __m512i m4 = _mm512_set1_epi8(0xF);
    for (size_t k = 0; k < 4; ++k) {  // dword k: elements 4k.. in the low nibbles, 16 + 4k.. in the high
      w[4 + k] = _mm512_and_si512(_mm512_srli_epi16(w[k], 4), m4);
      w[k] = _mm512_and_si512(w[k], m4);
    }
  }
  static void load4(const uint8_t* qs, size_t stride, __m512i& lo, __m512i& hi) {
    const __m512i v = rows4(qs, stride), m4 = _mm512_set1_epi8(0xF);
    lo = _mm512_and_si512(v, m4);
    hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  }
};
// MXFP4's codes and IQ4_NL's indices lie as Q4_0's nibbles; vpshufb turns each unpacked nibble
// into its biased value (F::values(): the 16 of them, in every 128-bit lane).
template <class F>
inline void look_up(__m512i* v, size_t n) {
  const __m512i values = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(F::values())));
  for (size_t k = 0; k < n; ++k) v[k] = _mm512_shuffle_epi8(values, v[k]);
}
template <class Bs>
struct LookedUpRows : Bs {
  static void load(const GroupRows& rows, size_t off, __m512i* w) {
    Q4_0Rows::load(rows, off, w);
    look_up<Bs>(w, 8);
  }
  static void load4(const uint8_t* qs, size_t stride, __m512i& lo, __m512i& hi) {
    __m512i v[2];
    Q4_0Rows::load4(qs, stride, v[0], v[1]);
    look_up<Bs>(v, 2);
    lo = v[0];
    hi = v[1];
  }
};
using MXFP4Rows = LookedUpRows<MXFP4Bs>;
using IQ4_NLRows = LookedUpRows<IQ4_NLBs>;
struct Q8_0Rows : Q8_0Bs {
  static void load(const GroupRows& rows, size_t off, __m512i* w) {
    group16(rows, off, w);
    group16(rows, off + 16, w + 4);
    transpose_rows(w);
    transpose_rows(w + 4);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (size_t k = 0; k < 8; ++k) w[k] = _mm512_xor_si512(w[k], flip);
  }
  static void load4(const uint8_t* qs, size_t stride, __m512i& lo, __m512i& hi) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    lo = _mm512_xor_si512(rows4(qs, stride), flip);
    hi = _mm512_xor_si512(rows4(qs + 16, stride), flip);
  }
};

// Q4_1's, Q5_0's and Q5_1's nibbles lie as Q4_0's; their fifth bits and mins are added by
// few_group.
struct Q4_1Rows : Q4_1Bs {
  static void load(const GroupRows& rows, size_t off, __m512i* w) { Q4_0Rows::load(rows, off, w); }
};
struct Q5_0Rows : Q5_0Bs {
  static void load(const GroupRows& rows, size_t off, __m512i* w) { Q4_0Rows::load(rows, off, w); }
};
struct Q5_1Rows : Q5_1Bs {
  static void load(const GroupRows& rows, size_t off, __m512i* w) { Q4_0Rows::load(rows, off, w); }
};

// The 32 bits at the same offset of each of the 16 rows' blocks (scales, mins, fifth bits), row 4g +
// i's in int32 4i + g.
struct RowDwords {
  __m512i index;
  explicit RowDwords(size_t stride) {
    alignas(64) int32_t at[kGroupRows];
    for (size_t r = 0; r < kGroupRows; ++r) at[4 * (r % 4) + r / 4] = static_cast<int32_t>(r * stride);
    index = _mm512_load_si512(at);
  }
  __m512i at(const uint8_t* p) const { return _mm512_i32gather_epi32(index, p, 1); }
  template <class F>
  __m512 scales_at(const uint8_t* block) const {
    return F::scales(at(block));
  }
};

// Rows [0, 16) of a group from g on (stride bytes apart), NT tokens: acc[t] holds row 4g + i's
// output in float 4i + g. ahead: the next group's first byte (null for none).
template <class F, int NT>
void few_group(const uint8_t* g, size_t stride, const uint8_t* ahead, const ActQ8x32* const* x, size_t n_blocks,
               __m512* acc) {
  constexpr size_t kStep = kGroupRows * F::kBytes;
  const RowDwords dwords(stride);
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const GroupRows rows(g, stride);
  for (size_t b = 0; b < n_blocks; ++b) {
    if (ahead != nullptr) prefetch_step(ahead + b * kStep, kStep);
    const uint8_t* block = g + b * F::kBytes;
    __m512i w[8];
    F::load(rows, b * F::kBytes + F::kQuantsAt, w);
    if constexpr (F::kFifthBitsAt != 0) add_fifth_bits(w, dwords.at(block + F::kFifthBitsAt));
    const __m512i head = dwords.at(block);
    const __m512 dw = F::scales(head);
    __m512 mw = _mm512_setzero_ps();
    if constexpr (F::kMin) mw = F::mins(head);
    for (int t = 0; t < NT; ++t) {
      const ActQ8x32& a = x[t][b];
      block_step<F>(acc[t], block_sum<NT>(w, a, F::offset(a)), dw, mw, a);
    }
  }
}

// Four rows' lanes for one token: row i's in 128-bit lane i, four int32 that sum to S_b less the
// token's offset.
inline __m512i lanes4(__m512i lo, __m512i hi, const ActQ8x32& a) {
  const __m512i xlo = _mm512_broadcast_i32x4(load16(a.qs)), xhi = _mm512_broadcast_i32x4(load16(a.qs + 16));
  return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xlo), hi, xhi);
}

// Four row groups' lanes (row i of group g in 128-bit lane i) summed per row: row 4g + i's sum in
// int32 4i + g, the order of few_group's registers.
inline __m512i transposed_sums(__m512i l0, __m512i l1, __m512i l2, __m512i l3) {
  const __m512i a = _mm512_add_epi32(_mm512_unpacklo_epi32(l0, l1), _mm512_unpackhi_epi32(l0, l1));
  const __m512i b = _mm512_add_epi32(_mm512_unpacklo_epi32(l2, l3), _mm512_unpackhi_epi32(l2, l3));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}

thread_local QmatmulScratch t_lanes;  // a group's per-row-group lanes, [token][block][row group]

// few_group's outputs for one or two tokens (F::kStreamedUpTo), where memory, not arithmetic,
// bounds the time: four rows at a time over every block, as the lane-convention kernel reads them
// (one run of four rows and a prefetch of the next four; few_group's sixteen rows side by side ran
// a one-token matvec from memory at 0.8-0.9x that kernel, this 0.85-1.05x), the lanes of the first
// three row groups kept per block; the fourth pass sums each block's four row groups' lanes into
// 16 rows and runs the float step, while memory keeps streaming the next group.
template <class F, int NT>
void few_group_streamed(const uint8_t* g, size_t stride, const uint8_t* ahead, const ActQ8x32* const* x,
                        size_t n_blocks, __m512* acc) {
  static_assert(!F::kMin && F::kFifthBitsAt == 0,
                "the streamed path runs the float step of Q4_0, Q8_0, MXFP4 and IQ4_NL");
  constexpr size_t kStep = 4 * F::kBytes;
  auto* lanes = reinterpret_cast<__m512i*>(t_lanes.reserve(static_cast<size_t>(NT) * n_blocks * 3 * sizeof(__m512i)));
  for (size_t q = 0; q < 3; ++q) {
    const uint8_t* p = g + 4 * q * stride + F::kQuantsAt;
    const uint8_t* next = g + 4 * (q + 1) * stride;
    for (size_t b = 0; b < n_blocks; ++b) {
      prefetch_step(next + b * kStep, kStep);
      __m512i lo, hi;
      F::load4(p + b * F::kBytes, stride, lo, hi);
      for (int t = 0; t < NT; ++t) lanes[(static_cast<size_t>(t) * n_blocks + b) * 3 + q] = lanes4(lo, hi, x[t][b]);
    }
  }
  const RowDwords dwords(stride);
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const uint8_t* p = g + 12 * stride + F::kQuantsAt;
  for (size_t b = 0; b < n_blocks; ++b) {
    if (ahead != nullptr) prefetch_step(ahead + b * kStep, kStep);
    const __m512 dw = dwords.scales_at<F>(g + b * F::kBytes);
    __m512i lo, hi;
    F::load4(p + b * F::kBytes, stride, lo, hi);
    for (int t = 0; t < NT; ++t) {
      const ActQ8x32& a = x[t][b];
      const __m512i* l = lanes + (static_cast<size_t>(t) * n_blocks + b) * 3;
      const __m512i sums =
          _mm512_add_epi32(transposed_sums(l[0], l[1], l[2], lanes4(lo, hi, a)), _mm512_set1_epi32(F::offset(a)));
      scale_add(acc[t], sums, dw, a.d);
    }
  }
}

thread_local QmatmulScratch t_tail_rows;  // a last group of fewer than 16 rows, padded with copies of its last

// NT tokens (at most kPassTokens) on GGUF rows; tail: the last group padded to 16 rows (tail_group's
// copy, row_bytes apart), null where n_rows is a multiple of 16.
template <class F, int NT>
void rows_pass(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* tail, const uint8_t* act,
               size_t act_stride, size_t n_blocks, float* y, size_t y_stride) {
  const ActQ8x32* x[NT];
  for (int t = 0; t < NT; ++t) x[t] = reinterpret_cast<const ActQ8x32*>(act + static_cast<size_t>(t) * act_stride);
  for (size_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const size_t nr = std::min(kGroupRows, n_rows - r0);
    const bool padded = nr < kGroupRows;
    const uint8_t* g = padded ? tail : w + r0 * w_stride;
    const size_t stride = padded ? n_blocks * F::kBytes : w_stride;
    const uint8_t* ahead = r0 + 2 * kGroupRows <= n_rows ? w + (r0 + kGroupRows) * w_stride : nullptr;
    __m512 acc[NT];
    if constexpr (NT <= F::kStreamedUpTo) {
      few_group_streamed<F, NT>(g, stride, ahead, x, n_blocks, acc);
    } else {
      few_group<F, NT>(g, stride, ahead, x, n_blocks, acc);
    }
    for (int t = 0; t < NT; ++t) {
      alignas(64) float out[kGroupRows];
      _mm512_store_ps(out, acc[t]);
      for (size_t r = 0; r < nr; ++r) y[static_cast<size_t>(t) * y_stride + r0 + r] = out[4 * (r % 4) + r / 4];
    }
  }
}

// The last group of rows [0, n_rows) padded to 16 rows with copies of its last row, in a per-thread
// copy (row_bytes apart), or null where n_rows is a multiple of 16: made once per call, not once per
// pass of tokens.
const uint8_t* tail_group(const uint8_t* w, size_t w_stride, size_t n_rows, size_t row_bytes) {
  const size_t nr = n_rows % kGroupRows;
  if (nr == 0) return nullptr;
  const uint8_t* g = w + (n_rows - nr) * w_stride;
  uint8_t* copy = t_tail_rows.reserve(kGroupRows * row_bytes);
  for (size_t r = 0; r < kGroupRows; ++r) {
    std::memcpy(copy + r * row_bytes, g + std::min(r, nr - 1) * w_stride, row_bytes);
  }
  return copy;
}

template <class F>
void gemm_rows(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
               size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  const uint8_t* tail = tail_group(w, w_stride, n_rows, n_blocks * F::kBytes);
  util::in_passes<kPassTokens>(n_tokens, [&](auto nt, size_t t0) {
    rows_pass<F, nt()>(w, w_stride, n_rows, tail, act + t0 * act_stride, act_stride, n_blocks, y + t0 * y_stride,
                       y_stride);
  });
}

// ---- packed rows ----

// A packed block of a group (packed_rows.h): the 16 rows' scales (kScaleBytes: fp16 for Q4_0 and
// Q8_0, E8M0 bytes for MXFP4; block_scales() gives row r's d in float r), then the quants, at q, as
// w[k] against a token's dword k (load()).
struct HalfScales {
  static constexpr size_t kScaleBytes = 2 * kGroupRows;
  static __m512 block_scales(const uint8_t* blk) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
  }
};
struct Q4_0Packed : Q4_0Bs, HalfScales {
  // The nibbles 0..15: dword k's low nibbles are elements 4k.., its high ones 16 + 4k...
  static void load(const uint8_t* q, __m512i* w) {
    const __m512i m4 = _mm512_set1_epi8(0xF);
    for (size_t k = 0; k < 4; ++k) {
      const __m512i v = _mm512_loadu_si512(q + 64 * k);
      w[k] = _mm512_and_si512(v, m4);
      w[4 + k] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    }
  }
};
// Q4_1 and Q5_1: each row's fp16 d and m side by side (64 bytes), one load for both.
struct HalfScalesAndMins {
  static constexpr size_t kScaleBytes = 4 * kGroupRows;
  static __m512 block_scales(const uint8_t* blk) { return half_scales(_mm512_loadu_si512(blk)); }
  static __m512 block_mins(const uint8_t* blk) { return Q4_1Bs::mins(_mm512_loadu_si512(blk)); }
};
// Q5's quants: the 16 rows' fifth bits as dword 0 (row r's in lane r), then Q4_0's nibble dwords.
inline void load_q5_packed(const uint8_t* q, __m512i* w) {
  Q4_0Packed::load(q + 4 * kGroupRows, w);
  add_fifth_bits(w, _mm512_loadu_si512(q));
}
struct Q4_1Packed : Q4_1Bs, HalfScalesAndMins {
  static void load(const uint8_t* q, __m512i* w) { Q4_0Packed::load(q, w); }
};
struct Q5_0Packed : Q5_0Bs, HalfScales {
  static void load(const uint8_t* q, __m512i* w) { load_q5_packed(q, w); }
};
struct Q5_1Packed : Q5_1Bs, HalfScalesAndMins {
  static void load(const uint8_t* q, __m512i* w) { load_q5_packed(q, w); }
};
struct Q8_0Packed : Q8_0Bs, HalfScales {
  // Stored signed, as the amx level's tiles read them: the 8 xors per block are shared by the
  // tokens, and a one-token step waits on memory.
  static void load(const uint8_t* q, __m512i* w) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (size_t k = 0; k < 8; ++k) w[k] = _mm512_xor_si512(_mm512_loadu_si512(q + 64 * k), flip);
  }
};

struct MXFP4Packed : MXFP4Bs {
  static constexpr size_t kScaleBytes = kGroupRows;
  static __m512 block_scales(const uint8_t* blk) {
    return scales(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk))));
  }
  static void load(const uint8_t* q, __m512i* w) {
    Q4_0Packed::load(q, w);
    look_up<MXFP4Bs>(w, 8);
  }
};

struct IQ4_NLPacked : IQ4_NLBs, HalfScales {
  static void load(const uint8_t* q, __m512i* w) {
    Q4_0Packed::load(q, w);
    look_up<IQ4_NLBs>(w, 8);
  }
};

// NT tokens (at most kPassTokens) on packed rows (n_rows a multiple of 16): token t's 16 outputs
// of a group in one register, stored as one run of y. More than one token prefetches the next group
// into L2; one token prefetches nothing: its matrix is one sequential stream (packed_rows.h) that
// the hardware prefetchers follow, and the 4 KiB-ahead L1 prefetch it had read slower
// (vks_bench_cpu_kernels --packed --packed-tokens 1 --types q8_0 q4_0 --shapes gate/up, 1 thread,
// three alternating rounds: Q8_0 21.0-24.3 -> 25.6-28.5 GB/s, Q4_0 21.8-27.6 -> 25.9-26.7).
template <class F, int NT>
void packed_pass(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                 size_t n_blocks, float* y, size_t y_stride) {
  constexpr size_t kBlock = kGroupRows * F::kBytes;
  const ActQ8x32* x[NT];
  for (int t = 0; t < NT; ++t) x[t] = reinterpret_cast<const ActQ8x32*>(act + static_cast<size_t>(t) * act_stride);
  for (size_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const uint8_t* g = w + r0 * w_stride;
    const uint8_t* ahead = r0 + kGroupRows < n_rows ? g + kGroupRows * w_stride : nullptr;
    __m512 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
    for (size_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = g + b * kBlock;
      if constexpr (NT > 1) {
        if (ahead != nullptr) prefetch_step(ahead + b * kBlock, kBlock);
      }
      __m512i q[8];
      F::load(blk + F::kScaleBytes, q);
      const __m512 dw = F::block_scales(blk);
      __m512 mw = _mm512_setzero_ps();
      if constexpr (F::kMin) mw = F::block_mins(blk);
      for (int t = 0; t < NT; ++t) {
        const ActQ8x32& a = x[t][b];
        block_step<F>(acc[t], block_sum<NT>(q, a, F::offset(a)), dw, mw, a);
      }
    }
    for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride + r0, acc[t]);
  }
}

template <class F>
void gemm_packed(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                 size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  util::in_passes<kPassTokens>(n_tokens, [&](auto nt, size_t t0) {
    packed_pass<F, nt()>(w, w_stride, n_rows, act + t0 * act_stride, act_stride, n_blocks, y + t0 * y_stride,
                         y_stride);
  });
}

// The packed table entry's form: it prepares nothing.
template <class F>
void packed_entry(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                  const uint8_t*, size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  gemm_packed<F>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
}

}  // namespace

void block_sums_q4_0(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                     size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  gemm_rows<Q4_0Rows>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
}
void block_sums_q8_0(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                     size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  gemm_rows<Q8_0Rows>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
}
void block_sums_mxfp4(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                      size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  gemm_rows<MXFP4Rows>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
}
void block_sums_q4_0_packed(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                            size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  gemm_packed<Q4_0Packed>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
}
void block_sums_q8_0_packed(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                            size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  gemm_packed<Q8_0Packed>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
}

void add_avx512vnni_block_sums_kernels(KernelTable& table) {
  table.gemm[2] = block_sums_q4_0;
  table.gemm[3] = gemm_rows<Q4_1Rows>;
  table.gemm[6] = gemm_rows<Q5_0Rows>;
  table.gemm[7] = gemm_rows<Q5_1Rows>;
  table.gemm[8] = block_sums_q8_0;
  table.gemm[39] = block_sums_mxfp4;
  table.gemm[20] = gemm_rows<IQ4_NLRows>;
  table.packed[2] = {{packed_entry<Q4_0Packed>, nullptr, nullptr, 0, 0}, 0};
  table.packed[3] = {{packed_entry<Q4_1Packed>, nullptr, nullptr, 0, 0}, 0};
  table.packed[6] = {{packed_entry<Q5_0Packed>, nullptr, nullptr, 0, 0}, 0};
  table.packed[7] = {{packed_entry<Q5_1Packed>, nullptr, nullptr, 0, 0}, 0};
  table.packed[8] = {{packed_entry<Q8_0Packed>, nullptr, nullptr, 0, 0}, 0};
  table.packed[39] = {{packed_entry<MXFP4Packed>, nullptr, nullptr, 0, 0}, 0};
  table.packed[20] = {{packed_entry<IQ4_NLPacked>, nullptr, nullptr, 0, 0}, 0};
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
