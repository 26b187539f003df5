// The avx512vnni level's Q4_K and Q5_K on weights packed in groups of 16 rows
// (WeightLayout::kRows16, packed_rows.h): every token count, sixteen rows per register. On the GGUF
// layout the avx512vnni level runs its own Q4_K (four rows side by side) and the avx level's Q5_K
// (one row per 128-bit register), both under the lane convention of kernels.h, so this gives their
// bits: per block the exact integer lanes L[k] (element e in lane (e % 16) / 4, sub-block j's
// products times its scale sc_j), acc[k] = acc[k] + float(L[k]) * (d_w * d_x), the min term macc =
// macc + float(-M) * (dmin_w * d_x) with M = sum_j m_j * (the sub-block's two 16-element activation
// sums), and y = ((acc0 + acc1) + (acc2 + acc3)) + macc. (The amx level has a Q4_K of its own, to
// its own convention, and replaces this one there; it inherits the Q5_K.)
//
// Packed, a Q4_K block is 36 dwords (d and dmin, 3 of scales, 32 of nibbles qs) and a Q5_K block 44
// (8 of fifth bits qh before the nibbles), and dword k of the 16 rows is one load. Chunk c's nibble
// dword i (elements 4i..4i+3 of sub-blocks 2c, low nibbles, and 2c + 1, high ones; Q5_K's fifth
// bits from qh dword i, bit j of each byte for sub-block j) has all four elements in lane i % 4: per
// sub-block and lane, two vpdpbusd (the dwords i and i + 4: 8 products of 0..31 and -127..127, |p|
// <= 31,496 < 2^15, so p is its own low int16) and one vpdpwssd with the scale in the low int16 and
// zero in the high add sc_j * p to lane i % 4 of every row: one sequential stream per group, no
// transposes, a token's 16 outputs one store.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernel_util.h"
#include "engine/cpu/quant/kernels.h"

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

#include "engine/cpu/quant/kquant_rows16.inc"

constexpr size_t kGroupRows = 16;
// The two types' blocks: d and dmin, 12 scale bytes, (Q5_K: qh 32,) qs 128.
template <bool kFifthBits>
struct KBlock {
  static constexpr size_t kBytes = kFifthBits ? 176 : 144;
  static constexpr size_t kPacked = kGroupRows * kBytes;  // 44 or 36 dwords of 16 rows
  static constexpr size_t kQhDword = 4, kQsDword = kFifthBits ? 12 : 4;
};
// Tokens per pass over a group's blocks: each holds four lanes of integers and five floats (a pass
// of 8 reads each block from L1 once per 8 tokens, as the packed Q6_K does).
constexpr int kMaxTokens = 8;

// NT tokens of rows [0, n_rows) (a multiple of 16). For each line it loads, the pass prefetches one
// line kKQuantStreamAhead bytes further into L1, in address order (kernel_util.h: the matrix's
// groups follow one another, one stream).
template <int NT, bool kFifthBits>
void pass(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, size_t n_blocks,
          float* y, size_t y_stride) {
  const ActQ8x256* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const ActQ8x256*>(act + static_cast<size_t>(t) * act_stride);
  using Block = KBlock<kFifthBits>;
  constexpr size_t kPackedBlock = Block::kPacked;
  const __m512i m4 = _mm512_set1_epi8(0x0F), one = _mm512_set1_epi8(1);
  for (size_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const uint8_t* g = w + r0 * w_stride;
    __m512 acc[NT][4], macc[NT];
    for (int t = 0; t < NT; ++t) {
      for (int k = 0; k < 4; ++k) acc[t][k] = _mm512_setzero_ps();
      macc[t] = _mm512_setzero_ps();
    }
    for (size_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = g + b * kPackedBlock;
      // The lines packed_scales (and Q5_K's qh) load.
      for (size_t i = 0; i < Block::kQsDword; ++i) {
        util::prefetch_here<util::PrefetchTo::kL1>(blk + util::kKQuantStreamAhead + 64 * i);
      }
      PackedScales s;
      packed_scales(blk, s);
      // The min term first: its eight mins are then free registers before the chunks need them
      // (macc is its own accumulator, so the order changes no bits).
      {
        __m512i min2[8];
        min_pairs(s.bytes, min2);
        for (int t = 0; t < NT; ++t) {
          const ActQ8x256& x = a[t][b];
          const __m512 mins = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_setzero_si512(), min_sum(min2, x.bsums)));
          macc[t] = _mm512_add_ps(macc[t], _mm512_mul_ps(mins, _mm512_mul_ps(s.dmin, _mm512_set1_ps(x.d))));
        }
      }
      __m512i qh[8];
      if constexpr (kFifthBits) {
        for (int i = 0; i < 8; ++i) qh[i] = _mm512_loadu_si512(blk + 64 * (Block::kQhDword + i));
      }
      __m512i lanes[NT][4];
      for (int t = 0; t < NT; ++t) {
        for (int k = 0; k < 4; ++k) lanes[t][k] = _mm512_setzero_si512();
      }
      // Unrolled (chunks and lanes): lane k is then a register, not an array in memory indexed at
      // run time.
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m512i sc_lo = scale_of(s.bytes, 2 * c), sc_hi = scale_of(s.bytes, 2 * c + 1);
        // Lane k takes the chunk's dwords k and k + 4, one lane at a time: four weight registers
        // live instead of sixteen (all eight dwords unpacked at once spilled).
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          // Sub-blocks 2c (low nibbles; Q5_K's fifth bit 2c) and 2c + 1 (high nibbles, bit 2c + 1)
          // of dwords k and k + 4, each byte's fifth bit brought to bit 4 (32-bit shifts; the mask
          // keeps each byte's own bit).
          __m512i q_lo[2], q_hi[2];
          for (int h = 0; h < 2; ++h) {
            const int i = k + 4 * h;
            // The prefetches go in address order (dwords 2k and 2k + 1), not the loads' order.
            util::prefetch_here<util::PrefetchTo::kL1>(blk + util::kKQuantStreamAhead +
                                                       64 * (Block::kQsDword + 8 * c + 2 * k + h));
            const __m512i v = _mm512_loadu_si512(blk + 64 * (Block::kQsDword + 8 * c + i));
            q_lo[h] = _mm512_and_si512(v, m4);
            q_hi[h] = _mm512_and_si512(_mm512_srli_epi32(v, 4), m4);
            if constexpr (kFifthBits) {
              const __m512i h_lo = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(qh[i], 2 * c), one), 4);
              const __m512i h_hi = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(qh[i], 2 * c + 1), one), 4);
              q_lo[h] = _mm512_or_si512(q_lo[h], h_lo);
              q_hi[h] = _mm512_or_si512(q_hi[h], h_hi);
            }
          }
#pragma GCC unroll 8
          for (int t = 0; t < NT; ++t) {
            const int8_t* x = a[t][b].qs + 64 * c;  // sub-block 2c's 32 activations, then 2c + 1's
            __m512i p_lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q_lo[0], dword_at(x + 4 * k));
            p_lo = _mm512_dpbusd_epi32(p_lo, q_lo[1], dword_at(x + 16 + 4 * k));
            __m512i p_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q_hi[0], dword_at(x + 32 + 4 * k));
            p_hi = _mm512_dpbusd_epi32(p_hi, q_hi[1], dword_at(x + 48 + 4 * k));
            lanes[t][k] = _mm512_dpwssd_epi32(lanes[t][k], p_lo, sc_lo);
            lanes[t][k] = _mm512_dpwssd_epi32(lanes[t][k], p_hi, sc_hi);
          }
        }
      }
      for (int t = 0; t < NT; ++t) {
        const __m512 dd = _mm512_mul_ps(s.d, _mm512_set1_ps(a[t][b].d));
        for (int k = 0; k < 4; ++k) {
          acc[t][k] = _mm512_add_ps(acc[t][k], _mm512_mul_ps(_mm512_cvtepi32_ps(lanes[t][k]), dd));
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]), _mm512_add_ps(acc[t][2], acc[t][3]));
      _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride + r0, _mm512_add_ps(sum, macc[t]));
    }
  }
}

// KernelTable::packed's contract; no tiles (prepared is null: PreparedKernel::prepare is).
template <bool kFifthBits>
void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, const uint8_t*,
          size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  util::in_passes<kMaxTokens>(n_tokens, [&](auto nt, size_t t0) {
    pass<nt(), kFifthBits>(w, w_stride, n_rows, act + t0 * act_stride, act_stride, n_blocks, y + t0 * y_stride, y_stride);
  });
}

}  // namespace

void add_avx512vnni_q4k_q5k_packed_kernels(KernelTable& table) {
  // A prefill's tokens pass over each group in eights; 128 tokens per work item, as the other
  // packed kernels', so that a group comes from memory once for them.
  table.packed[12] = {{gemm<false>, nullptr, nullptr, 0, 0}, 128};
  table.packed[13] = {{gemm<true>, nullptr, nullptr, 0, 0}, 128};
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
