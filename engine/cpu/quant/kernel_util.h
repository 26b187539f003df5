#pragma once
// Helpers the kernel files share, each with internal linkage (static): every file compiled for its
// own ISA gets its own copy (see kernels.h on why nothing inline with external linkage is shared).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace vks::cpuq::util {

// Calls fn(std::integral_constant<int, n>{}) for n in 1..kMax (nothing otherwise): a kernel
// templated on its token count (its accumulators in registers), chosen at run time.
template <int kMax, class Fn>
static inline void with_count(size_t n, const Fn& fn) {
  if constexpr (kMax > 0) {
    if (n == static_cast<size_t>(kMax)) {
      fn(std::integral_constant<int, kMax>{});
    } else {
      with_count<kMax - 1>(n, fn);
    }
  }
}

// Calls fn(nt, t0) for the tokens [t0, t0 + nt) of n in passes of kMax (the last shorter), nt the
// pass's count as with_count gives it: kernels whose accumulators hold at most kMax tokens.
template <int kMax, class Fn>
static inline void in_passes(size_t n, const Fn& fn) {
  for (size_t t0 = 0; t0 < n; t0 += kMax) {
    with_count<kMax>(n - t0 < static_cast<size_t>(kMax) ? n - t0 : static_cast<size_t>(kMax),
                     [&](auto nt) { fn(nt, t0); });
  }
}

// Where prefetch_range brings lines: L1 (x86 prefetcht0) or L2 (prefetcht1).
enum class PrefetchTo { kL1 = 3, kL2 = 2 };

// Prefetches the cache lines of [p, p + bytes), one per 64 bytes from p: the kernels fetch their
// share of the next row group each block step as one contiguous range.
template <PrefetchTo To>
static inline void prefetch_range(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, static_cast<int>(To));
}

// How far ahead the K-quant kernels on packed rows prefetch, one line per line they load: Q4_K and
// Q5_K into L1, Q6_K into L2. vks_bench_cpu_kernels --packed, one token, 1 thread: 8192 ahead read
// Q4_K at 29.9-30.7 GB/s, 4096 at 27.0-27.9, 6144 at 28.4-28.9, 12288 at 29.4-30.5 (Q5_K 27.0-28.6
// and 28.9-29.3 at 4096); Q6_K into L2 at 8192 read 28.4-30.1, into L1 at any distance 12.9-18.4
// (below the next group into L2 that it had before, 21-22: why was not found). Without them
// (--packed-tokens 1 8 --types q4_k q5_k q6_k --shapes gate/up, three alternating rounds) one token
// read at 14.7-20.0 GB/s instead of 23.1-31.7 and 8 tokens at 5.3-7.4 GB/s instead of 9.5-13.3.
// (The block-sums kernels' one token reads fastest with no prefetch: kernels_avx512vnni_block_sums.cpp.)
inline constexpr size_t kKQuantStreamAhead = 8192;

// Prefetches the line of p where the call is written. GCC's scheduler moves __builtin_prefetch
// freely: it gathered a packed Q4_K block step's 36 prefetches into one burst at the step's top,
// and that read one token's matrix from memory at 21.9-23.0 GB/s where the same code with one
// prefetch per load, each before its load, read 27.0-28.4 (vks_bench_cpu_kernels --packed
// --packed-tokens 1, AMD EPYC, 1 thread, 4096 ahead). A volatile asm stays where it is written.
template <PrefetchTo To>
static inline void prefetch_here(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  if constexpr (To == PrefetchTo::kL1) {
    asm volatile("prefetcht0 (%0)" : : "r"(p));
  } else {
    asm volatile("prefetcht1 (%0)" : : "r"(p));
  }
#else
  __builtin_prefetch(p, 0, static_cast<int>(To));
#endif
}

static inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

static inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// IEEE half to float, exact (subnormals, infinities and NaN included).
static inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1Fu) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    exp = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The 6-bit scale and min of sub-block j of a Q4_K/Q5_K block (ggml's get_scale_min_k4).
static inline void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// The 16 signed 6-bit scales of a Q3_K block.
static inline void q3_k_scales(const uint8_t* packed, int* scales) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (packed[j] & 0x0F) : (packed[j - 8] >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = (low | (high << 4)) - 32;
  }
}

// The final combination of the lane convention (kernels.h).
static inline float finish(const float* acc, float macc) { return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + macc; }

}  // namespace vks::cpuq::util
