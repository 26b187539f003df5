// CPU reference conversions of the non-linear 4-bit types IQ4_NL and IQ4_XS. Dequantization is
// ggml's dequantize_row_iq4_nl / _xs. The quantizers follow the shape of ggml's quantize_iq4_nl_impl
// (without an importance matrix: each weight's importance x^2, a search over 15 trial scales, then
// the best one's least-squares scale)
// without claiming its bytes: they make model files (vks-make-model), and what vkstream computes
// is defined by the blocks, not by how they were chosen.
#include <cmath>
#include <cstring>

#include "engine/gguf/ggml_type.h"
#include "engine/gguf/iq4_values.h"
#include "engine/gguf/quant_rows.h"

namespace vks::quant {
namespace {

using iq4::kValues;

// ggml's best_index_int8: the index of the value nearest x (the lower one on a tie). A NaN x gets
// the last index: defined, never out of range.
int nearest_index(float x) {
  if (x <= kValues[0]) return 0;
  if (x >= kValues[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < kValues[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - kValues[hi - 1] < kValues[hi] - x ? hi - 1 : hi;
}

// The scale of 32 weights (value(index) * scale approximates x), their indices in idx.
float block_scale(const float* x, uint8_t* idx) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (!(amax >= 1e-15f)) {  // an all-zero block (or NaNs only): index 0 at scale 0, every weight 0
    std::memset(idx, 0, 32);
    return 0.0f;
  }
  // Each trial inverse scale puts max at a different value near the end of the table; the scale
  // kept is the least-squares one of the trial whose indices fit x best (weights x^2).
  float best_d = 0.0f, best = -1.0f;
  for (int trial = -7; trial <= 7; ++trial) {
    const float id = (static_cast<float>(trial) + kValues[0]) / max;
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float w = x[j] * x[j];
      const float q = kValues[nearest_index(id * x[j])];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
    if (sumq2 > 0.0f && (best < 0.0f || sumqx * sumqx > best * sumq2)) {
      best_d = sumqx / sumq2;
      best = best_d * sumqx;
    }
  }
  const float id = best_d != 0.0f ? 1.0f / best_d : 0.0f;
  for (int j = 0; j < 32; ++j) idx[j] = static_cast<uint8_t>(nearest_index(id * x[j]));
  return best_d;
}

// 32 indices as 16 bytes in Q4_0's nibble order.
void pack_nibbles(const uint8_t* idx, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(idx[j] | idx[j + 16] << 4);
}

void dequantize_nibbles(const uint8_t* qs, float d, float* y) {
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kValues[qs[j] & 0x0F]);
    y[j + 16] = d * static_cast<float>(kValues[qs[j] >> 4]);
  }
}

}  // namespace

void dequantize_iq4_nl(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockIQ4_NL>(src, b);
    dequantize_nibbles(block.qs, fp16_to_fp32(block.d), dst + b * 32);
  }
}

void dequantize_iq4_xs(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockIQ4_XS>(src, b);
    const float d = fp16_to_fp32(block.d);
    for (int ib = 0; ib < 8; ++ib) {
      const float dl = d * static_cast<float>(iq4_xs_scale(block, ib) - 32);
      dequantize_nibbles(block.qs + 16 * ib, dl, dst + b * 256 + 32 * ib);
    }
  }
}

void quantize_iq4_nl(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    uint8_t idx[32];
    BlockIQ4_NL block;
    const float d = block_scale(src + b * 32, idx);
    block.d = fp32_to_fp16(d);
    // The indices again for the scale as stored (the half rounds it).
    const float dh = fp16_to_fp32(block.d);
    const float id = dh != 0.0f ? 1.0f / dh : 0.0f;
    for (int j = 0; j < 32; ++j) idx[j] = static_cast<uint8_t>(nearest_index(id * src[b * 32 + j]));
    pack_nibbles(idx, block.qs);
    std::memcpy(dst + b * sizeof(BlockIQ4_NL), &block, sizeof(BlockIQ4_NL));
  }
}

// As ggml: each sub-block's own scale first, then one super-block scale d = -(the largest of them
// by magnitude) / 32 and 6-bit multiples of it, and the indices again for each sub-block's scale.
void quantize_iq4_xs(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * 256;
    float scales[8];
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (int ib = 0; ib < 8; ++ib) {
      uint8_t idx[32];
      scales[ib] = block_scale(x + 32 * ib, idx);
      if (std::fabs(scales[ib]) > amax_scale) {
        amax_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    BlockIQ4_XS block{};
    block.d = fp32_to_fp16(-max_scale / 32.0f);
    const float d = fp16_to_fp32(block.d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int ib = 0; ib < 8; ++ib) {
      const int l = clamp_to_int(std::nearbyint(id * scales[ib]), -32, 31);
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
      uint8_t idx[32];
      for (int j = 0; j < 32; ++j) idx[j] = static_cast<uint8_t>(nearest_index(idl * x[32 * ib + j]));
      pack_nibbles(idx, block.qs + 16 * ib);
      const int ls = l + 32;
      block.scales_l[ib / 2] = static_cast<uint8_t>(block.scales_l[ib / 2] | (ls & 0xF) << (4 * (ib % 2)));
      block.scales_h = static_cast<uint16_t>(block.scales_h | (ls >> 4) << (2 * ib));
    }
    std::memcpy(dst + b * sizeof(BlockIQ4_XS), &block, sizeof(BlockIQ4_XS));
  }
}

}  // namespace vks::quant
