// act_quant.h's quantizers at the 512-bit level: a block of 32 (or a run of 256) in 512-bit
// registers instead of element by element, to the scalar quantizer's bits (a prefill quantized its
// activations in 6.7% of its time with the scalar loop). Why each step gives the same bits:
// - amax: vmaxps returns its second operand when either is NaN, so max(|x|, amax) skips a NaN as
//   the scalar `a > amax ? a : amax` does; a maximum does not depend on the order.
// - d and its inverse are the scalar code's own float operations on the same amax.
// - q: v = x * id is the same product; the scalar clamps v at +-127 and rounds the rest to the
//   nearest integer, ties to even, which is what cvtps2dq does (rounding mode given explicitly) on
//   v clamped to [-127, 127]; a NaN v (x or id not finite) becomes 0 as in the scalar code.
// - the sums are integer sums, exact in any order.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernels.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers (kernels_avx512vnni.cpp)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace vks::cpuq {
namespace {

inline __m512 abs_ps(__m512 v) { return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF))); }

// amax of n (a multiple of 16) floats, NaN skipped.
inline float abs_max(const float* x, size_t n) {
  __m512 m = _mm512_setzero_ps();
  for (size_t i = 0; i < n; i += 16) m = _mm512_max_ps(abs_ps(_mm512_loadu_ps(x + i)), m);
  return _mm512_reduce_max_ps(m);
}

// 16 floats times id, rounded and clamped as the scalar quantizer does, as int32.
inline __m512i quantize16(const float* x, __m512 id) {
  const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x), id);
  const __mmask16 is_number = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  const __m512 clamped = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_maskz_cvt_roundps_epi32(is_number, clamped, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// Quantizes n (a multiple of 16) floats with one scale into q; returns d, adds the 16-element
// sums to sums16 (one per 16 elements) when given, and returns the total sum in *sum.
inline float quantize_run(const float* x, int8_t* q, size_t n, int16_t* sums16, int32_t* sum) {
  const float amax = abs_max(x, n);
  const float d = amax / 127.0f;
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 127.0f / amax : 0.0f);
  __m512i total = _mm512_setzero_si512();
  for (size_t i = 0; i < n; i += 16) {
    const __m512i v = quantize16(x + i, id);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtepi32_epi8(v));
    if (sums16 != nullptr) sums16[i / 16] = static_cast<int16_t>(_mm512_reduce_add_epi32(v));
    total = _mm512_add_epi32(total, v);
  }
  *sum = _mm512_reduce_add_epi32(total);
  return d;
}

}  // namespace

void quantize_act_q8x32_avx512(const float* x, ActQ8x32* out, size_t n_blocks) {
  for (size_t b = 0; b < n_blocks; ++b) {
    ActQ8x32& blk = out[b];
    int32_t sum = 0;
    blk.d = quantize_run(x + b * 32, blk.qs, 32, nullptr, &sum);
    finish_act_q8x32(blk, sum);
  }
}

void quantize_act_q8x256_avx512(const float* x, ActQ8x256* out, size_t n_blocks) {
  for (size_t b = 0; b < n_blocks; ++b) {
    ActQ8x256& blk = out[b];
    int32_t sum = 0;
    blk.d = quantize_run(x + b * 256, blk.qs, 256, blk.bsums, &sum);
    blk.pad[0] = blk.pad[1] = blk.pad[2] = 0;
  }
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
