// The avx512vnni level's (and so the amx level's) Q6_K on weights packed in groups of 16 rows
// (WeightLayout::kRows16, packed_rows.h): every token count, sixteen rows per register. On the GGUF
// layout both levels run the avx512vnni level's Q6_K (four rows side by side, each in a 128-bit
// lane), so this gives that kernel's bits, the lane convention of kernels.h: per block the exact
// integer lanes L[k] (element e in lane (e % 16) / 4; Q6_K's -32 offset, 32 times the sum of scale
// times 16-element activation sum, subtracted from lane 0), acc[k] = acc[k] + float(L[k]) * (d_w * d_x), and
// y = ((acc0 + acc1) + (acc2 + acc3)) + 0 (Q6_K has no min term, its accumulator stays zero).
//
// Packed, dword i of a 32-byte run of the block's low bits is one load for 16 rows, and its four
// elements all lie in lane i % 4: one vpmaddubsw per dword (6-bit weights 0..63 against the
// token's dword: two int16 of two products each, |p| <= 2 * 63 * 128 < 2^15, never saturated) and
// one vpdpwssd with the sub-block's signed scale in both int16 add scale * (p_lo + p_hi) to lane
// i % 4 of every row: one sequential stream per group, no transposes, a token's 16 outputs one store.
// (vpdpbusd into a zeroed register gave the same sums with a register copy more per dword: the
// in-cache pass took 2-3% longer.)
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

#include "engine/cpu/quant/kquant_rows16.inc"  // dword_at

constexpr size_t kGroupRows = 16;
constexpr size_t kBytes = 210;                    // ql 128, qh 64, 16 scales, fp16 d
constexpr size_t kPackedBlock = kGroupRows * kBytes;  // 52 dwords of 16 rows, then their 16 d
constexpr size_t kScalesDword = 48;               // dwords 48..51: the 16 signed scales
constexpr size_t kDAt = 52 * 64;
// Tokens per pass over a group's blocks: each holds four lanes of integers and four of floats
// (more spill them; a pass of 8 reads each block from L1 once per 8 tokens).
constexpr int kMaxTokens = 8;

// Per int32 of v, a byte of it sign-extended into an int16 (the rest zero): `low` (0..3) into the
// low int16, `high` (0..3, or -1 for none) into the high one. vpshufb puts the byte in the int16's
// top byte, the shift brings it down with its sign.
inline __m512i signed_bytes(__m512i v, int low, int high) {
  int32_t word[4];
  for (int i = 0; i < 4; ++i) {
    const uint32_t hi = high < 0 ? 0x80u : static_cast<uint32_t>(4 * i + high);
    word[i] = static_cast<int32_t>(0x80u | static_cast<uint32_t>(4 * i + low) << 8 | 0x80u << 16 | hi << 24);
  }
  return _mm512_srai_epi16(_mm512_shuffle_epi8(v, _mm512_broadcast_i32x4(_mm_setr_epi32(word[0], word[1], word[2], word[3]))), 8);
}

// A block's 16 scales for 16 rows: sc[j] scale j in both int16 of each row (for the lanes), pairs[m]
// scales 2m and 2m + 1 in its two int16 (for the offset's sum against the 16-element sums).
struct Scales {
  __m512i sc[16];
  __m512i pairs[8];
};

inline void load_scales(const uint8_t* blk, Scales& s) {
  for (int m = 0; m < 4; ++m) {
    const __m512i v = _mm512_loadu_si512(blk + 64 * (kScalesDword + m));  // scales 4m..4m+3
    for (int b = 0; b < 4; ++b) s.sc[4 * m + b] = signed_bytes(v, b, b);
    s.pairs[2 * m] = signed_bytes(v, 0, 1);
    s.pairs[2 * m + 1] = signed_bytes(v, 2, 3);
  }
}

// NT tokens of rows [0, n_rows) (a multiple of 16). The pass prefetches the stream
// kKQuantStreamAhead bytes ahead into L2, a line per line it loads (into L1 it read slower than the
// next group into L2: kernel_util.h).
template <int NT>
void pass(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, size_t n_blocks,
          float* y, size_t y_stride) {
  const ActQ8x256* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const ActQ8x256*>(act + static_cast<size_t>(t) * act_stride);
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  for (size_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const uint8_t* g = w + r0 * w_stride;
    __m512 acc[NT][4];
    for (int t = 0; t < NT; ++t) {
      for (int k = 0; k < 4; ++k) acc[t][k] = _mm512_setzero_ps();
    }
    for (size_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = g + b * kPackedBlock;
      // The scales' and d's lines (dwords 48..52).
      for (size_t i = kScalesDword; i <= kDAt / 64; ++i) {
        util::prefetch_here<util::PrefetchTo::kL2>(blk + util::kKQuantStreamAhead + 64 * i);
      }
      Scales s;
      load_scales(blk, s);
      __m512i lanes[NT][4];
      for (int t = 0; t < NT; ++t) {
        for (int k = 0; k < 4; ++k) lanes[t][k] = _mm512_setzero_si512();
      }
      // Half n (elements 128n..): low bits in dwords 16n..16n+15, high bits in 32 + 8n..; dword i
      // of each 32-byte run gives elements 128n + 32c + 4i.. (c = 0..3) of sub-block 8n + 2c + i / 4.
      // Unrolled: lane i % 4 is then a register, not an array in memory indexed at run time.
#pragma GCC unroll 2
      for (int n = 0; n < 2; ++n) {
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          // Three lines of dwords 0..47 in address order, as it loads three.
          for (int j = 0; j < 3; ++j) {
            util::prefetch_here<util::PrefetchTo::kL2>(blk + util::kKQuantStreamAhead + 64 * (3 * (8 * n + i) + j));
          }
          const __m512i l01 = _mm512_loadu_si512(blk + 64 * (16 * n + i));
          const __m512i l23 = _mm512_loadu_si512(blk + 64 * (16 * n + 8 + i));
          const __m512i h = _mm512_loadu_si512(blk + 64 * (32 + 8 * n + i));
          __m512i q[4];
          q[0] = _mm512_or_si512(_mm512_and_si512(l01, m4), _mm512_and_si512(_mm512_slli_epi16(h, 4), m30));
          q[1] = _mm512_or_si512(_mm512_and_si512(l23, m4), _mm512_and_si512(_mm512_slli_epi16(h, 2), m30));
          q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l01, 4), m4), _mm512_and_si512(h, m30));
          q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l23, 4), m4),
                                 _mm512_and_si512(_mm512_srli_epi16(h, 2), m30));
          const int sub = 8 * n + i / 4;
          for (int t = 0; t < NT; ++t) {
            const int8_t* x = a[t][b].qs + 128 * n + 4 * i;
            for (int c = 0; c < 4; ++c) {
              const __m512i p = _mm512_maddubs_epi16(q[c], dword_at(x + 32 * c));
              lanes[t][i % 4] = _mm512_dpwssd_epi32(lanes[t][i % 4], p, s.sc[sub + 2 * c]);
            }
          }
        }
      }
      const __m512 d_w = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kDAt)));
      for (int t = 0; t < NT; ++t) {
        const ActQ8x256& x = a[t][b];
        __m512i corr = _mm512_setzero_si512();
        for (int m = 0; m < 8; ++m) corr = _mm512_dpwssd_epi32(corr, s.pairs[m], dword_at(x.bsums + 2 * m));
        lanes[t][0] = _mm512_sub_epi32(lanes[t][0], _mm512_slli_epi32(corr, 5));
        const __m512 dd = _mm512_mul_ps(d_w, _mm512_set1_ps(x.d));
        for (int k = 0; k < 4; ++k) {
          acc[t][k] = _mm512_add_ps(acc[t][k], _mm512_mul_ps(_mm512_cvtepi32_ps(lanes[t][k]), dd));
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]), _mm512_add_ps(acc[t][2], acc[t][3]));
      _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride + r0, _mm512_add_ps(sum, _mm512_setzero_ps()));
    }
  }
}

// KernelTable::packed's contract; no tiles (prepared is null: PreparedKernel::prepare is).
void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, const uint8_t*,
          size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  util::in_passes<kMaxTokens>(n_tokens, [&](auto nt, size_t t0) {
    pass<nt()>(w, w_stride, n_rows, act + t0 * act_stride, act_stride, n_blocks, y + t0 * y_stride, y_stride);
  });
}

}  // namespace

void add_avx512vnni_q6k_packed_kernels(KernelTable& table) {
  // A prefill's tokens pass over each group in eights; 128 tokens per work item, as the other
  // packed kernels', so that a group comes from memory once for them.
  table.packed[14] = {{gemm, nullptr, nullptr, 0, 0}, 128};
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
