#pragma once
// The per-type block converters that ggml_type.cpp's table points at (internal to vks_gguf).
#include <cstdint>
#include <cstring>

namespace vks::quant {

// Block b of an array of Blocks, copied out byte-wise: inside a mapped file blocks need not be
// aligned.
template <class Block>
Block load_block(const uint8_t* src, uint64_t b) {
  Block block;
  std::memcpy(&block, src + b * sizeof(Block), sizeof(Block));
  return block;
}

// Float types (ggml_type.cpp).
void dequantize_f32(const uint8_t* src, float* dst, uint64_t n);
void dequantize_f16(const uint8_t* src, float* dst, uint64_t n);
void dequantize_bf16(const uint8_t* src, float* dst, uint64_t n);
void quantize_f32(const float* src, uint8_t* dst, uint64_t n);
void quantize_f16(const float* src, uint8_t* dst, uint64_t n);
void quantize_bf16(const float* src, uint8_t* dst, uint64_t n);

// Legacy 32-element blocks (quant_legacy.cpp).
void dequantize_q4_0(const uint8_t* src, float* dst, uint64_t n_blocks);
void dequantize_q4_1(const uint8_t* src, float* dst, uint64_t n_blocks);
void dequantize_q5_0(const uint8_t* src, float* dst, uint64_t n_blocks);
void dequantize_q5_1(const uint8_t* src, float* dst, uint64_t n_blocks);
void dequantize_q8_0(const uint8_t* src, float* dst, uint64_t n_blocks);
void quantize_q4_0(const float* src, uint8_t* dst, uint64_t n_blocks);
void quantize_q4_1(const float* src, uint8_t* dst, uint64_t n_blocks);
void quantize_q5_0(const float* src, uint8_t* dst, uint64_t n_blocks);
void quantize_q5_1(const float* src, uint8_t* dst, uint64_t n_blocks);
void quantize_q8_0(const float* src, uint8_t* dst, uint64_t n_blocks);

// MXFP4 (quant_mxfp4.cpp).
void dequantize_mxfp4(const uint8_t* src, float* dst, uint64_t n_blocks);
void quantize_mxfp4(const float* src, uint8_t* dst, uint64_t n_blocks);

// The non-linear 4-bit types (quant_iq4.cpp).
void dequantize_iq4_nl(const uint8_t* src, float* dst, uint64_t n_blocks);
void dequantize_iq4_xs(const uint8_t* src, float* dst, uint64_t n_blocks);
void quantize_iq4_nl(const float* src, uint8_t* dst, uint64_t n_blocks);
void quantize_iq4_xs(const float* src, uint8_t* dst, uint64_t n_blocks);

// K-quant 256-element super-blocks (quant_kquants.cpp).
void dequantize_q2_K(const uint8_t* src, float* dst, uint64_t n_blocks);
void dequantize_q3_K(const uint8_t* src, float* dst, uint64_t n_blocks);
void dequantize_q4_K(const uint8_t* src, float* dst, uint64_t n_blocks);
void dequantize_q5_K(const uint8_t* src, float* dst, uint64_t n_blocks);
void dequantize_q6_K(const uint8_t* src, float* dst, uint64_t n_blocks);
// Straightforward K-quant quantizers (quant_kquants_quantize.cpp).
void quantize_q2_K(const float* src, uint8_t* dst, uint64_t n_blocks);
void quantize_q3_K(const float* src, uint8_t* dst, uint64_t n_blocks);
void quantize_q4_K(const float* src, uint8_t* dst, uint64_t n_blocks);
void quantize_q5_K(const float* src, uint8_t* dst, uint64_t n_blocks);
void quantize_q6_K(const float* src, uint8_t* dst, uint64_t n_blocks);

// float -> int with a defined result for NaN and out-of-range values (the plain cast would be
// undefined behaviour, and values from a hostile file can be anything).
inline int clamp_to_int(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo))) return v != v ? 0 : lo;  // NaN -> 0
  if (v > static_cast<float>(hi)) return hi;
  return static_cast<int>(v);
}

}  // namespace vks::quant
