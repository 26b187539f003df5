#pragma once
// Activations quantized per block for the integer dot products, as llama.cpp does: blocks of 32
// (Q8_0 with Q8_1's sum, for the legacy weight types) and of 256 (Q8_K with its 16-element sums,
// for the K-quants). Symmetric, 8 bits in [-127, 127] (never -128, so SSSE3's sign trick is exact),
// d = amax / 127, q = nearest integer of x / d (ties to even). One scalar implementation for every
// ISA level: a token's activations are quantized the same way whatever the batch or the level.
//
// Plain structs only (no inline functions): the ISA-specific kernel files include this header.
#include <cstddef>
#include <cstdint>

namespace vks::cpuq {

// 1.5 * 2^23 as a float's bits, and as a float: an int32 lane started from kActFloatBias and
// advanced by L (|L| < 2^22), read as a float, is kActFloatBiasValue + L exactly (the 512-bit
// level's Q4_K min terms).
inline constexpr int32_t kActFloatBias = 0x4B400000;
inline constexpr float kActFloatBiasValue = 12582912.0f;

struct alignas(16) ActQ8x32 {
  int8_t qs[32];
  int32_t neg_c8[4];  // {-8 * sum, 0, 0, 0}: Q4_0's offset correction, ready to add to the lanes
  float dv[4];    // d four times, ready to multiply lanes by
  float d;        // x ≈ d * q
  float s;        // d * sum (the block sum in float, for weight types with an additive min)
  int32_t sum;    // sum of qs
  int32_t pad;
};
static_assert(sizeof(ActQ8x32) == 80);

struct alignas(16) ActQ8x256 {
  int8_t qs[256];
  int16_t bsums[16];  // sum of each 16 consecutive qs
  float d;
  int32_t pad[3];
};
static_assert(sizeof(ActQ8x256) == 304);

// Fills a block's derived fields (dv, sum, the Q4_0 offsets, s, pad) from its d and the sum of its
// qs: every level's quantizer ends a block with it, so the fields cannot disagree between levels.
// Defined out of line (the ISA-specific files include this header).
void finish_act_q8x32(ActQ8x32& blk, int32_t sum);

// Quantizes n_blocks * 32 (or * 256) floats.
void quantize_act_q8x32(const float* x, ActQ8x32* out, size_t n_blocks);
void quantize_act_q8x256(const float* x, ActQ8x256* out, size_t n_blocks);

}  // namespace vks::cpuq
