// CPU reference conversions of MXFP4 blocks, as ggml's dequantize_row_mxfp4 and
// quantize_row_mxfp4_ref compute them.
#include <cmath>
#include <cstring>

#include "engine/gguf/ggml_type.h"
#include "engine/gguf/mxfp4_codes.h"
#include "engine/gguf/quant_rows.h"

namespace vks::quant {
namespace {

using mxfp4::e8m0_half;
using mxfp4::kDoubledE2M1;

// ggml's best_index_mxfp4: the code whose value is nearest to x, the lowest code on a tie (so 0,
// not code 8's -0; a NaN x gets code 0).
uint8_t nearest_code(float x, float d) {
  uint8_t best = 0;
  float best_err = std::fabs(kDoubledE2M1[0] * d - x);
  for (uint8_t i = 1; i < 16; ++i) {
    const float err = std::fabs(kDoubledE2M1[i] * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

// ggml: (uint8_t)(floorf(log2f(amax)) - 2 + 127). The top value 6 * 2^(e - 127) is then
// 1.5 * 2^floor(log2(amax)), at least 3/4 of amax: the largest weights may be clipped. The float
// log2f matters: just below a power of two it rounds up to it, in ggml too. Out of range (amax below
// 2^-125, or infinite) ggml's cast is undefined behaviour; here it saturates to 0 or 255.
uint8_t shared_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  const float e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
  if (e <= 0.0f) return 0;
  if (e >= 255.0f) return 255;
  return static_cast<uint8_t>(e);
}

}  // namespace

void dequantize_mxfp4(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    BlockMXFP4 block;
    std::memcpy(&block, src + b * sizeof(BlockMXFP4), sizeof(BlockMXFP4));
    const float d = e8m0_half(block.e);
    for (int j = 0; j < 16; ++j) {
      dst[b * 32 + j] = static_cast<float>(kDoubledE2M1[block.qs[j] & 0x0F]) * d;
      dst[b * 32 + j + 16] = static_cast<float>(kDoubledE2M1[block.qs[j] >> 4]) * d;
    }
  }
}

// ggml's quantize_row_mxfp4_ref: a power-of-two scale from the block's largest magnitude, then each
// weight's nearest code (no search over scales).
void quantize_mxfp4(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    }
    BlockMXFP4 block;
    block.e = shared_exponent(amax);
    const float d = e8m0_half(block.e);
    for (int j = 0; j < 16; ++j) {
      block.qs[j] = static_cast<uint8_t>(nearest_code(x[j], d) | nearest_code(x[j + 16], d) << 4);
    }
    std::memcpy(dst + b * sizeof(BlockMXFP4), &block, sizeof(BlockMXFP4));
  }
}

}  // namespace vks::quant
