// Straightforward quantizers for the K-quant types (used by vks-make-model and tests): each
// sub-block gets the scale (and min) that spans its values, the super-block scales are chosen so
// the largest sub-block scale uses the full range of its 4/6/8-bit code, and every weight is
// rounded to the nearest level of its sub-block's decoded scale. Not ggml's error-minimizing
// search (its files come out slightly more accurate), but the same layouts, read by the same
// dequantizers.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/gguf/ggml_type.h"
#include "engine/gguf/quant_rows.h"

namespace vks::quant {
namespace {

int nearest(float v, int lo, int hi) { return clamp_to_int(std::round(v), lo, hi); }

// Scale and min of an asymmetric sub-block: x ≈ scale * q - min with q in [0, levels], min >= 0.
void span(const float* x, int n, int levels, float& scale, float& min) {
  float lo = x[0];
  float hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  lo = std::min(lo, 0.0f);  // as ggml: the min is never positive, so 0 stays representable
  scale = (hi - lo) / static_cast<float>(levels);
  min = -lo;
}

float max_of(const float* v, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i) m = std::max(m, v[i]);
  return m;
}

// Quantizes one asymmetric sub-block against its decoded scale dl and min ml.
void codes_asym(const float* x, int n, float dl, float ml, int levels, int* q) {
  for (int i = 0; i < n; ++i) q[i] = dl > 0.0f ? nearest((x[i] + ml) / dl, 0, levels) : 0;
}

void store_half(uint16_t& field, float v) { field = fp32_to_fp16(v); }

// The 8 six-bit scales and mins of a Q4_K/Q5_K block, as ggml packs them (see get_scale_min_k4).
void pack_k4(const int (&ls)[8], const int (&lm)[8], uint8_t* scales) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = static_cast<uint8_t>(ls[j]);
      scales[j + 4] = static_cast<uint8_t>(lm[j]);
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls[j] >> 4) << 6));
      scales[j] = static_cast<uint8_t>(scales[j] | ((lm[j] >> 4) << 6));
    }
  }
}

// Q4_K (levels 15) and Q5_K (levels 31): 8 sub-blocks of 32 with 6-bit scales and mins. Returns
// the 256 codes in q and fills d, dmin and the packed scales.
void quantize_k4_like(const float* x, int levels, uint16_t& d_field, uint16_t& dmin_field, uint8_t* scales, int* q) {
  float scale[8];
  float min[8];
  for (int j = 0; j < 8; ++j) span(x + 32 * j, 32, levels, scale[j], min[j]);
  const float d = max_of(scale, 8) / 63.0f;
  const float dmin = max_of(min, 8) / 63.0f;
  store_half(d_field, d);
  store_half(dmin_field, dmin);
  const float dd = fp16_to_fp32(d_field);
  const float dm = fp16_to_fp32(dmin_field);
  int ls[8];
  int lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = dd > 0.0f ? nearest(scale[j] / dd, 0, 63) : 0;
    lm[j] = dm > 0.0f ? nearest(min[j] / dm, 0, 63) : 0;
    codes_asym(x + 32 * j, 32, dd * static_cast<float>(ls[j]), dm * static_cast<float>(lm[j]), levels, q + 32 * j);
  }
  std::memset(scales, 0, K_SCALE_SIZE);
  pack_k4(ls, lm, scales);
}

// Symmetric sub-blocks of 16 (Q3_K, Q6_K): x ≈ d * ls[j] * q, q in [qmin, qmax]; ls in
// [-lmax, lmax]. Returns the codes and the integer scales.
void quantize_symmetric16(const float* x, int qmax, int lmax, float& d_out, int* ls, int* q) {
  float scale[16];
  float amax_scale = 0.0f;
  for (int j = 0; j < 16; ++j) {
    float amax = 0.0f;
    for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(x[16 * j + i]));
    scale[j] = amax / static_cast<float>(qmax);
    amax_scale = std::max(amax_scale, scale[j]);
  }
  const float d = fp16_to_fp32(fp32_to_fp16(amax_scale / static_cast<float>(lmax)));
  d_out = d;
  for (int j = 0; j < 16; ++j) {
    ls[j] = d > 0.0f ? nearest(scale[j] / d, -lmax, lmax) : 0;
    const float dl = d * static_cast<float>(ls[j]);
    for (int i = 0; i < 16; ++i) q[16 * j + i] = dl > 0.0f ? nearest(x[16 * j + i] / dl, -qmax - 1, qmax) : 0;
  }
}

template <class Block>
void store(const Block& block, uint8_t* dst, uint64_t b) {
  std::memcpy(dst + b * sizeof(Block), &block, sizeof(Block));
}

}  // namespace

void quantize_q2_K(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * QK_K;
    BlockQ2_K block{};
    float scale[16];
    float min[16];
    for (int j = 0; j < 16; ++j) span(x + 16 * j, 16, 3, scale[j], min[j]);
    store_half(block.d, max_of(scale, 16) / 15.0f);
    store_half(block.dmin, max_of(min, 16) / 15.0f);
    const float dd = fp16_to_fp32(block.d);
    const float dm = fp16_to_fp32(block.dmin);
    int q[QK_K];
    for (int j = 0; j < 16; ++j) {
      const int ls = dd > 0.0f ? nearest(scale[j] / dd, 0, 15) : 0;
      const int lm = dm > 0.0f ? nearest(min[j] / dm, 0, 15) : 0;
      block.scales[j] = static_cast<uint8_t>(ls | (lm << 4));
      codes_asym(x + 16 * j, 16, dd * static_cast<float>(ls), dm * static_cast<float>(lm), 3, q + 16 * j);
    }
    // Weight i: 2-bit plane (i % 128) / 32 of qs[32 * (i / 128) + i % 32].
    for (int i = 0; i < static_cast<int>(QK_K); ++i) {
      block.qs[32 * (i / 128) + i % 32] |= static_cast<uint8_t>(q[i] << (2 * ((i % 128) / 32)));
    }
    store(block, dst, b);
  }
}

void quantize_q3_K(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * QK_K;
    BlockQ3_K block{};
    float d = 0.0f;
    int ls[16];
    int q[QK_K];
    quantize_symmetric16(x, 3, 31, d, ls, q);
    store_half(block.d, d);
    // Scales: 6 bits each, stored + 32 (ggml's packing: low nibbles in bytes 0-7, top 2 bits in 8-11).
    for (int j = 0; j < 16; ++j) {
      const int l = ls[j] + 32;
      if (j < 8) block.scales[j] = static_cast<uint8_t>(l & 0xF);
      else block.scales[j - 8] = static_cast<uint8_t>(block.scales[j - 8] | ((l & 0xF) << 4));
      block.scales[j % 4 + 8] = static_cast<uint8_t>(block.scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
    }
    // Weight i: u = q + 4 in 0..7; its low 2 bits in plane j = (i % 128) / 32 of qs[32h + i % 32],
    // its bit 2 as bit 4h + j of hmask[i % 32] (set = no -4 offset).
    for (int i = 0; i < static_cast<int>(QK_K); ++i) {
      const int u = q[i] + 4;
      const int h = i / 128;
      const int j = (i % 128) / 32;
      block.qs[32 * h + i % 32] |= static_cast<uint8_t>((u & 3) << (2 * j));
      if (u >= 4) block.hmask[i % 32] |= static_cast<uint8_t>(1u << (4 * h + j));
    }
    store(block, dst, b);
  }
}

void quantize_q4_K(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    BlockQ4_K block{};
    int q[QK_K];
    quantize_k4_like(src + b * QK_K, 15, block.d, block.dmin, block.scales, q);
    // Weight i: group g = i / 64; low nibble of qs[32g + i % 32] for the first 32, high for the next.
    for (int i = 0; i < static_cast<int>(QK_K); ++i) {
      block.qs[32 * (i / 64) + i % 32] |= static_cast<uint8_t>(q[i] << (i % 64 < 32 ? 0 : 4));
    }
    store(block, dst, b);
  }
}

void quantize_q5_K(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    BlockQ5_K block{};
    int q[QK_K];
    quantize_k4_like(src + b * QK_K, 31, block.d, block.dmin, block.scales, q);
    // As Q4_K for the low 4 bits; bit 4 as bit i / 32 of qh[i % 32].
    for (int i = 0; i < static_cast<int>(QK_K); ++i) {
      block.qs[32 * (i / 64) + i % 32] |= static_cast<uint8_t>((q[i] & 0xF) << (i % 64 < 32 ? 0 : 4));
      if (q[i] & 0x10) block.qh[i % 32] |= static_cast<uint8_t>(1u << (i / 32));
    }
    store(block, dst, b);
  }
}

void quantize_q6_K(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * QK_K;
    BlockQ6_K block{};
    float d = 0.0f;
    int ls[16];
    int q[QK_K];
    quantize_symmetric16(x, 31, 127, d, ls, q);
    store_half(block.d, d);
    for (int j = 0; j < 16; ++j) block.scales[j] = static_cast<int8_t>(ls[j]);
    // Weight i: u = q + 32 in 0..63. Half h = i / 128, quarter k = (i % 128) / 32, l = i % 32: low
    // nibble of ql[64h + (k % 2) * 32 + l] for k < 2, high nibble for k >= 2; top 2 bits at bit 2k
    // of qh[32h + l].
    for (int i = 0; i < static_cast<int>(QK_K); ++i) {
      const int u = q[i] + 32;
      const int h = i / 128;
      const int k = (i % 128) / 32;
      const int l = i % 32;
      block.ql[64 * h + (k % 2) * 32 + l] |= static_cast<uint8_t>((u & 0xF) << (k < 2 ? 0 : 4));
      block.qh[32 * h + l] |= static_cast<uint8_t>((u >> 4) << (2 * k));
    }
    store(block, dst, b);
  }
}

}  // namespace vks::quant
