// The 512-bit level (AVX-512 F/BW/VL with VNNI): four neighbouring rows side by side, row i's
// 16-byte chunk of a block in 128-bit lane i of a register, so one vpdpbusd (u8 x s8, four products
// summed into each int32) does four rows at once. In a 128-bit lane, int32 j collects elements
// 4j..4j+3 of the chunk: the chunk of elements 0..15 and the chunk of 16..31 accumulated into the
// same register give exactly row i's 4 lanes of the lane convention (kernels.h; integer sums are
// exact whatever their order), with no fold. The float step then runs on 16 floats: row i's 4
// lanes at 4i..4i+3, the convention's acc[k] + float(L[k]) * (d_w * d_x) per element, so every
// output gets the bits of every other level. A weight block group is unpacked once for up to 8
// tokens; a row group past the last row repeats the last row and its outputs are not stored.
#include <immintrin.h>

#include <algorithm>
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
// GCC 12's AVX-512 headers start many intrinsics from a self-initialized "undefined" register,
// which -Wmaybe-uninitialized reports once they are inlined here (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace vks::cpuq {
namespace {

#include "engine/cpu/quant/x86_helpers.inc"

constexpr int kRows = 4;     // rows per register (one per 128-bit lane)
constexpr int kMaxTokens = 8;  // tokens sharing one unpacked weight block group

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

// 16 bytes in every 128-bit lane (one token's chunk, shared by the four rows).
inline __m512i every_lane(const void* p) { return _mm512_broadcast_i32x4(load16(p)); }

// ---- legacy 32-element blocks, four rows at a time ----

struct Q4_0x4 {
  static constexpr size_t kBytes = 18;
  struct W {
    __m512i lo, hi;  // elements 0..15 and 16..31 of the four rows, unsigned 0..15
    __m512 d;
  };
  static void load(const uint8_t* const* rows, size_t off, W& w) {
    const __m512i q = rows16(rows, off + 2);
    const __m512i m4 = _mm512_set1_epi8(0xF);
    w.lo = _mm512_and_si512(q, m4);
    w.hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
    w.d = row_scales(rows, off);
  }
  // The convention's lanes with the -8 offset (8 * sum, subtracted from lane 0 of each row).
  static __m512i lanes(const W& w, const ActQ8x32& a) {
    __m512i l = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.lo, every_lane(a.qs));
    l = _mm512_dpbusd_epi32(l, w.hi, every_lane(a.qs + 16));
    return _mm512_sub_epi32(l, every_lane(a.c8));
  }
};

// vpdpbusd wants one unsigned operand: the activations biased by 128 (x ^ 0x80 = x + 128 as u8,
// x in [-127, 127]) times the signed weights, less 128 times each lane's weight sum, which the
// load computes once for all tokens.
struct Q8_0x4 {
  static constexpr size_t kBytes = 34;
  struct W {
    __m512i lo, hi;  // elements 0..15 and 16..31 of the four rows, signed
    __m512i bias;    // -128 * (the weights' sum in each lane)
    __m512 d;
  };
  static void load(const uint8_t* const* rows, size_t off, W& w) {
    w.lo = rows16(rows, off + 2);
    w.hi = rows16(rows, off + 18);
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512i sums = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, w.lo), ones, w.hi);
    w.bias = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 7));
    w.d = row_scales(rows, off);
  }
  static __m512i lanes(const W& w, const ActQ8x32& a) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512i l = _mm512_dpbusd_epi32(w.bias, _mm512_xor_si512(every_lane(a.qs), flip), w.lo);
    return _mm512_dpbusd_epi32(l, _mm512_xor_si512(every_lane(a.qs + 16), flip), w.hi);
  }
};

// Reading four rows side by side makes four short streams, which the hardware prefetchers follow
// badly (a one-token matvec from memory ran at 0.65x the one-row AVX2 kernel). So each block step
// also prefetches its share of the next row group's bytes, which lie in one contiguous range: the
// memory sees a single sequential stream one group ahead (matvec 1.4x AVX2's, see ARCHITECTURE.md).
template <class K>
inline constexpr size_t kGroupStep = kRows * K::kBytes;  // bytes of a row group per block step

inline void prefetch_step(const uint8_t* p, size_t bytes) {
  for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T0);
}

// Four rows (rows[i] -> y[i], the first n_valid stored) for NT tokens; ahead: the next row group's
// first byte (null for none).
template <class K, int NT>
void tile(const uint8_t* const* rows, const uint8_t* ahead, const ActQ8x32* const* a, size_t n_blocks, float* y,
          size_t y_stride, size_t n_valid) {
  typename K::W wb;
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (size_t b = 0; b < n_blocks; ++b) {
    if (ahead != nullptr) prefetch_step(ahead + b * kGroupStep<K>, kGroupStep<K>);
    K::load(rows, b * K::kBytes, wb);
    for (int t = 0; t < NT; ++t) {
      const ActQ8x32& ab = a[t][b];
      const __m512 scale = _mm512_mul_ps(wb.d, _mm512_set1_ps(ab.d));
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_cvtepi32_ps(K::lanes(wb, ab)), scale));
    }
  }
  for (int t = 0; t < NT; ++t) {
    float lanes[16];
    _mm512_storeu_ps(lanes, acc[t]);
    for (size_t i = 0; i < n_valid; ++i) y[static_cast<size_t>(t) * y_stride + i] = util::finish(lanes + 4 * i, 0.0f);
  }
}

template <class K, int NT>
void row_groups(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                size_t n_blocks, float* y, size_t y_stride) {
  const ActQ8x32* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const ActQ8x32*>(act + static_cast<size_t>(t) * act_stride);
  for (size_t r = 0; r < n_rows; r += kRows) {
    const uint8_t* rows[kRows];
    for (int i = 0; i < kRows; ++i) rows[i] = w + std::min(r + static_cast<size_t>(i), n_rows - 1) * w_stride;
    const uint8_t* ahead = r + 2 * kRows <= n_rows ? w + (r + kRows) * w_stride : nullptr;
    tile<K, NT>(rows, ahead, a, n_blocks, y + r, y_stride, std::min<size_t>(kRows, n_rows - r));
  }
}

template <class K, int NT>
void tokens_then_rest(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                      size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  if constexpr (NT > 0) {
    if (n_tokens == NT) {
      row_groups<K, NT>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride);
    } else {
      tokens_then_rest<K, NT - 1>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
    }
  }
}

template <class K>
void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, size_t n_tokens,
          size_t n_blocks, float* y, size_t y_stride) {
  size_t t0 = 0;
  for (; t0 + kMaxTokens <= n_tokens; t0 += kMaxTokens) {
    row_groups<K, kMaxTokens>(w, w_stride, n_rows, act + t0 * act_stride, act_stride, n_blocks, y + t0 * y_stride,
                              y_stride);
  }
  if (t0 < n_tokens) {
    tokens_then_rest<K, kMaxTokens - 1>(w, w_stride, n_rows, act + t0 * act_stride, act_stride, n_tokens - t0,
                                        n_blocks, y + t0 * y_stride, y_stride);
  }
}

}  // namespace

void add_avx512vnni_kernels(KernelTable& table) {
  table.gemm[2] = gemm<Q4_0x4>;
  table.gemm[8] = gemm<Q8_0x4>;
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
