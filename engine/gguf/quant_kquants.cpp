// CPU reference conversions of ggml's K-quant super-block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K),
// as ggml's dequantize_row_*_K compute them (same float operations in the same order).
#include <cstring>

#include "engine/gguf/ggml_type.h"
#include "engine/gguf/quant_rows.h"

namespace vks::quant {
namespace {

// The 16 signed 6-bit scales of a Q3_K block: the low 4 bits of scale j are the low (j < 8) or
// high (j >= 8) nibble of byte j % 8, the top 2 bits are bits 2*(j/4).. of byte 8 + j % 4; minus 32.
void unpack_q3_k_scales(const uint8_t (&packed)[K_SCALE_SIZE], int (&scales)[16]) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (packed[j] & 0x0F) : (packed[j - 8] >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = (low | (high << 4)) - 32;
  }
}

}  // namespace

void dequantize_q2_K(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockQ2_K>(src, b);
    const float d = fp16_to_fp32(block.d);
    const float min = fp16_to_fp32(block.dmin);
    float* y = dst + b * QK_K;
    const uint8_t* q = block.qs;
    int is = 0;
    for (int n = 0; n < static_cast<int>(QK_K); n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {
          const uint8_t sc = block.scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = min * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
        }
        shift += 2;
      }
      q += 32;
    }
  }
}

void dequantize_q3_K(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockQ3_K>(src, b);
    const float d_all = fp16_to_fp32(block.d);
    int scales[16];
    unpack_q3_k_scales(block.scales, scales);
    float* y = dst + b * QK_K;
    const uint8_t* q = block.qs;
    uint8_t m = 1;  // the hmask bit of the current 32-element group
    int is = 0;
    for (int n = 0; n < static_cast<int>(QK_K); n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {
          const float dl = d_all * static_cast<float>(scales[is++]);
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int value = ((q[l] >> shift) & 3) - ((block.hmask[l] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(value);
          }
        }
        shift += 2;
        m = static_cast<uint8_t>(m << 1);
      }
      q += 32;
    }
  }
}

void dequantize_q4_K(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockQ4_K>(src, b);
    const float d = fp16_to_fp32(block.d);
    const float min = fp16_to_fp32(block.dmin);
    float* y = dst + b * QK_K;
    const uint8_t* q = block.qs;
    for (int is = 0; is < 8; is += 2) {
      uint8_t sc = 0;
      uint8_t m = 0;
      get_scale_min_k4(is, block.scales, &sc, &m);
      const float d1 = d * sc;
      const float m1 = min * m;
      get_scale_min_k4(is + 1, block.scales, &sc, &m);
      const float d2 = d * sc;
      const float m2 = min * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
      q += 32;
    }
  }
}

void dequantize_q5_K(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockQ5_K>(src, b);
    const float d = fp16_to_fp32(block.d);
    const float min = fp16_to_fp32(block.dmin);
    float* y = dst + b * QK_K;
    const uint8_t* ql = block.qs;
    uint8_t u1 = 1;  // qh bit of the low-nibble sub-block
    uint8_t u2 = 2;  // and of the high-nibble one
    for (int is = 0; is < 8; is += 2) {
      uint8_t sc = 0;
      uint8_t m = 0;
      get_scale_min_k4(is, block.scales, &sc, &m);
      const float d1 = d * sc;
      const float m1 = min * m;
      get_scale_min_k4(is + 1, block.scales, &sc, &m);
      const float d2 = d * sc;
      const float m2 = min * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (block.qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + (block.qh[l] & u2 ? 16 : 0)) - m2;
      ql += 32;
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

void dequantize_q6_K(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const auto block = load_block<BlockQ6_K>(src, b);
    const float d = fp16_to_fp32(block.d);
    float* y = dst + b * QK_K;
    const uint8_t* ql = block.ql;
    const uint8_t* qh = block.qh;
    const int8_t* sc = block.scales;
    for (int n = 0; n < static_cast<int>(QK_K); n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

}  // namespace vks::quant
