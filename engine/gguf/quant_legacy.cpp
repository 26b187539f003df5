// CPU reference conversions of ggml's legacy 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0), as ggml's dequantize_row_* and quantize_row_*_ref compute them.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "engine/gguf/ggml_type.h"
#include "engine/gguf/quant_rows.h"

namespace vks::quant {
namespace {

template <class Block>
void store_block(const Block& block, uint8_t* dst, uint64_t b) {
  std::memcpy(dst + b * sizeof(Block), &block, sizeof(Block));
}

uint32_t load_qh(const uint8_t (&qh)[4]) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 | static_cast<uint32_t>(qh[2]) << 16 |
         static_cast<uint32_t>(qh[3]) << 24;
}

void store_qh(uint32_t v, uint8_t (&qh)[4]) {
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(v >> (8 * k));
}

// The element of largest magnitude, with its sign (ggml's "max" of the symmetric quantizers).
float signed_absmax(const float* x, int n) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
}

}  // namespace

void dequantize_q4_0(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockQ4_0>(src, b);
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < 16; ++j) {
      dst[b * 32 + j] = static_cast<float>((block.qs[j] & 0x0F) - 8) * d;
      dst[b * 32 + j + 16] = static_cast<float>((block.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockQ4_1>(src, b);
    const float d = fp16_to_fp32(block.d);
    const float m = fp16_to_fp32(block.m);
    for (int j = 0; j < 16; ++j) {
      dst[b * 32 + j] = static_cast<float>(block.qs[j] & 0x0F) * d + m;
      dst[b * 32 + j + 16] = static_cast<float>(block.qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockQ5_0>(src, b);
    const float d = fp16_to_fp32(block.d);
    const uint32_t qh = load_qh(block.qh);
    for (int j = 0; j < 16; ++j) {
      const int high0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int high1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      dst[b * 32 + j] = static_cast<float>(((block.qs[j] & 0x0F) | high0) - 16) * d;
      dst[b * 32 + j + 16] = static_cast<float>(((block.qs[j] >> 4) | high1) - 16) * d;
    }
  }
}

void dequantize_q5_1(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockQ5_1>(src, b);
    const float d = fp16_to_fp32(block.d);
    const float m = fp16_to_fp32(block.m);
    const uint32_t qh = load_qh(block.qh);
    for (int j = 0; j < 16; ++j) {
      const int high0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int high1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      dst[b * 32 + j] = static_cast<float>((block.qs[j] & 0x0F) | high0) * d + m;
      dst[b * 32 + j + 16] = static_cast<float>((block.qs[j] >> 4) | high1) * d + m;
    }
  }
}

void dequantize_q8_0(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockQ8_0>(src, b);
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < 32; ++j) dst[b * 32 + j] = static_cast<float>(block.qs[j]) * d;
  }
}

// ggml's quantize_row_q4_0_ref: the scale maps the element of largest magnitude to -8.
void quantize_q4_0(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * 32;
    BlockQ4_0 block;
    const float d = signed_absmax(x, 32) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block.d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      // ggml: MIN(15, (int8_t)(x * id + 8.5f)); the int8 cast truncates toward zero.
      const int q0 = std::min(15, clamp_to_int(x[j] * id + 8.5f, -128, 127));
      const int q1 = std::min(15, clamp_to_int(x[j + 16] * id + 8.5f, -128, 127));
      block.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
    }
    store_block(block, dst, b);
  }
}

// ggml's quantize_row_q4_1_ref: 16 levels from the block's min to its max.
void quantize_q4_1(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * 32;
    BlockQ4_1 block;
    float min = 0.0f;
    float max = 0.0f;
    min_max(x, 32, min, max);
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block.d = fp32_to_fp16(d);
    block.m = fp32_to_fp16(min);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, clamp_to_int((x[j] - min) * id + 0.5f, -128, 127));
      const int q1 = std::min(15, clamp_to_int((x[j + 16] - min) * id + 0.5f, -128, 127));
      block.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
    }
    store_block(block, dst, b);
  }
}

// ggml's quantize_row_q5_0_ref: as Q4_0 with 32 levels, the element of largest magnitude to -16.
void quantize_q5_0(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * 32;
    BlockQ5_0 block;
    const float d = signed_absmax(x, 32) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block.d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(31, clamp_to_int(x[j] * id + 16.5f, -128, 127));
      const int q1 = std::min(31, clamp_to_int(x[j + 16] * id + 16.5f, -128, 127));
      block.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>((q0 & 0x10) >> 4) << j;
      qh |= static_cast<uint32_t>((q1 & 0x10) >> 4) << (j + 16);
    }
    store_qh(qh, block.qh);
    store_block(block, dst, b);
  }
}

// ggml's quantize_row_q5_1_ref: 32 levels from the block's min to its max.
void quantize_q5_1(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * 32;
    BlockQ5_1 block;
    float min = 0.0f;
    float max = 0.0f;
    min_max(x, 32, min, max);
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block.d = fp32_to_fp16(d);
    block.m = fp32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(31, clamp_to_int((x[j] - min) * id + 0.5f, 0, 255));
      const int q1 = std::min(31, clamp_to_int((x[j + 16] - min) * id + 0.5f, 0, 255));
      block.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>((q0 & 0x10) >> 4) << j;
      qh |= static_cast<uint32_t>((q1 & 0x10) >> 4) << (j + 16);
    }
    store_qh(qh, block.qh);
    store_block(block, dst, b);
  }
}

// ggml's quantize_row_q8_0_ref.
void quantize_q8_0(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * 32;
    BlockQ8_0 block;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block.d = fp32_to_fp16(d);
    for (int j = 0; j < 32; ++j) {
      block.qs[j] = static_cast<int8_t>(clamp_to_int(std::round(x[j] * id), -128, 127));
    }
    store_block(block, dst, b);
  }
}

}  // namespace vks::quant
