// CPU dequantization of the legacy, K-quant, MXFP4 and IQ4 block types on hand-made blocks. Expected
// values come from each format's element-wise description (which bits of which bytes make weight i,
// and which scale applies), written independently of the sweep-order code under test; scales are
// packed with ggml's own packing rules. MXFP4's quantizer is checked against blocks worked out by hand
// from llama.cpp's quantize_row_mxfp4_ref.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "engine/common/error.h"
#include "engine/gguf/ggml_type.h"

namespace vks {
namespace {

constexpr float kD = 0.0123f;
constexpr float kDmin = 0.0456f;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (uint8_t& v : b) v = static_cast<uint8_t>(rng());
  return b;
}

void put_half(uint8_t* at, float v) {
  const uint16_t h = fp32_to_fp16(v);
  std::memcpy(at, &h, 2);
}

float half(float v) { return fp16_to_fp32(fp32_to_fp16(v)); }

// Dequantizes n_blocks blocks (from a deliberately misaligned buffer) and compares element i with
// expected(block bytes, i) computed in double.
void check(GgmlType t, std::vector<uint8_t> blocks, const std::function<double(const uint8_t*, int)>& expected) {
  const auto traits = ggml_type_traits(t);
  ASSERT_TRUE(traits && traits->supported);
  const size_t n_blocks = blocks.size() / traits->type_size;
  ASSERT_EQ(n_blocks * traits->type_size, blocks.size());
  std::vector<uint8_t> unaligned(blocks.size() + 1);
  std::memcpy(unaligned.data() + 1, blocks.data(), blocks.size());
  std::vector<float> y(n_blocks * traits->block_size);
  dequantize_row(t, unaligned.data() + 1, y.data(), y.size());
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks.data() + b * traits->type_size;
    for (uint32_t i = 0; i < traits->block_size; ++i) {
      const double want = expected(block, static_cast<int>(i));
      ASSERT_NEAR(y[b * traits->block_size + i], want, 1e-6 * (1.0 + std::fabs(want)))
          << ggml_type_name(t) << " block " << b << " element " << i;
    }
  }
}

// Low nibble of qs[i] for i < 16, high nibble of qs[i - 16] otherwise (the 32-element legacy types).
int legacy_nibble(const uint8_t* qs, int i) { return i < 16 ? (qs[i] & 15) : (qs[i - 16] >> 4); }
int bit(const uint8_t* bytes, int i) { return (bytes[i / 8] >> (i % 8)) & 1; }

TEST(QuantBlocks, Q4_1) {
  auto blocks = random_bytes(3 * 20, 1);
  for (int b = 0; b < 3; ++b) {
    put_half(&blocks[b * 20], kD * (b + 1));
    put_half(&blocks[b * 20 + 2], -kDmin * b);
  }
  int b = -1;
  check(GgmlType::kQ4_1, blocks, [&](const uint8_t* blk, int i) {
    if (i == 0) ++b;
    return double(half(kD * (b + 1))) * legacy_nibble(blk + 4, i) + double(half(-kDmin * b));
  });
}

TEST(QuantBlocks, Q5_0) {
  auto blocks = random_bytes(2 * 22, 2);
  put_half(&blocks[0], kD);
  put_half(&blocks[22], -2 * kD);
  check(GgmlType::kQ5_0, blocks, [&](const uint8_t* blk, int i) {
    uint16_t h;
    std::memcpy(&h, blk, 2);
    const int q = legacy_nibble(blk + 6, i) + 16 * bit(blk + 2, i);
    return double(fp16_to_fp32(h)) * (q - 16);
  });
}

TEST(QuantBlocks, Q5_1) {
  auto blocks = random_bytes(2 * 24, 3);
  put_half(&blocks[0], kD);
  put_half(&blocks[2], -kDmin);
  put_half(&blocks[24], 3 * kD);
  put_half(&blocks[26], kDmin);
  check(GgmlType::kQ5_1, blocks, [&](const uint8_t* blk, int i) {
    uint16_t d, m;
    std::memcpy(&d, blk, 2);
    std::memcpy(&m, blk + 2, 2);
    const int q = legacy_nibble(blk + 8, i) + 16 * bit(blk + 4, i);
    return double(fp16_to_fp32(d)) * q + double(fp16_to_fp32(m));
  });
}

TEST(QuantBlocks, Q2_K) {
  // Layout: scales[16] qs[64] d dmin.
  auto blocks = random_bytes(2 * 84, 4);
  put_half(&blocks[80], kD);
  put_half(&blocks[82], kDmin);
  put_half(&blocks[84 + 80], -kD);
  put_half(&blocks[84 + 82], 2 * kDmin);
  check(GgmlType::kQ2_K, blocks, [&](const uint8_t* blk, int i) {
    uint16_t d, dmin;
    std::memcpy(&d, blk + 80, 2);
    std::memcpy(&dmin, blk + 82, 2);
    // Weight i: 128-element half h, within it 2-bit plane j = (i % 128) / 32 of byte
    // qs[32h + i % 32]; scale byte i / 16: low nibble scale, high nibble min.
    const int h = i / 128, j = (i % 128) / 32;
    const int q = (blk[16 + 32 * h + i % 32] >> (2 * j)) & 3;
    const uint8_t sc = blk[i / 16];
    return double(fp16_to_fp32(d)) * (sc & 15) * q - double(fp16_to_fp32(dmin)) * (sc >> 4);
  });
}

// ggml's quantize_row_q3_K_ref packing of 16 six-bit scales into 12 bytes.
void pack_q3_k_scales(const int (&ls)[16], uint8_t* scales) {
  std::memset(scales, 0, 12);
  for (int j = 0; j < 16; ++j) {
    int l = ls[j];
    if (j < 8) scales[j] = static_cast<uint8_t>(l & 0xF);
    else scales[j - 8] = static_cast<uint8_t>(scales[j - 8] | ((l & 0xF) << 4));
    l >>= 4;
    scales[j % 4 + 8] = static_cast<uint8_t>(scales[j % 4 + 8] | (l << (2 * (j / 4))));
  }
}

TEST(QuantBlocks, Q3_K) {
  // Layout: hmask[32] qs[64] scales[12] d.
  auto blocks = random_bytes(2 * 110, 5);
  int ls[2][16];
  for (int b = 0; b < 2; ++b) {
    for (int j = 0; j < 16; ++j) ls[b][j] = (j * 7 + b * 13 + 5) % 64;  // stored value; scale = value - 32
    pack_q3_k_scales(ls[b], &blocks[b * 110 + 96]);
    put_half(&blocks[b * 110 + 108], (b + 1) * kD);
  }
  int b = -1;
  check(GgmlType::kQ3_K, blocks, [&](const uint8_t* blk, int i) {
    if (i == 0) ++b;
    // Weight i: 2 low bits from plane j of qs[32h + i % 32], minus 4 unless bit 4h + j of
    // hmask[i % 32] is set.
    const int h = i / 128, j = (i % 128) / 32;
    const int low = (blk[32 + 32 * h + i % 32] >> (2 * j)) & 3;
    const int high = (blk[i % 32] >> (4 * h + j)) & 1;
    const int q = low - (high ? 0 : 4);
    return double(half((b + 1) * kD)) * (ls[b][i / 16] - 32) * q;
  });
}

// ggml's quantize_row_q4_K_ref packing of 8 six-bit scales and mins into 12 bytes.
void pack_k4_scales(const int (&ls)[8], const int (&lm)[8], uint8_t* scales) {
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

TEST(QuantBlocks, GetScaleMinK4Unpacks) {
  const int ls[8] = {0, 63, 17, 42, 5, 63, 33, 60};
  const int lm[8] = {63, 0, 21, 9, 48, 31, 1, 62};
  uint8_t packed[12];
  pack_k4_scales(ls, lm, packed);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, m = 0;
    get_scale_min_k4(j, packed, &sc, &m);
    EXPECT_EQ(sc, ls[j]) << j;
    EXPECT_EQ(m, lm[j]) << j;
  }
}

TEST(QuantBlocks, Q4_K) {
  // Layout: d dmin scales[12] qs[128].
  auto blocks = random_bytes(2 * 144, 6);
  int ls[2][8], lm[2][8];
  for (int b = 0; b < 2; ++b) {
    for (int j = 0; j < 8; ++j) {
      ls[b][j] = (j * 11 + b * 5 + 3) % 64;
      lm[b][j] = (j * 23 + b * 7 + 1) % 64;
    }
    put_half(&blocks[b * 144], (b + 1) * kD);
    put_half(&blocks[b * 144 + 2], (b + 1) * kDmin);
    pack_k4_scales(ls[b], lm[b], &blocks[b * 144 + 4]);
  }
  int b = -1;
  check(GgmlType::kQ4_K, blocks, [&](const uint8_t* blk, int i) {
    if (i == 0) ++b;
    // Weight i: 64-element group g; its first 32 weights are the low nibbles of qs[32g..32g+31],
    // the next 32 the high nibbles; sub-block i / 32 has its own scale and min.
    const int g = i / 64, r = i % 64;
    const uint8_t byte = blk[16 + 32 * g + r % 32];
    const int q = r < 32 ? (byte & 15) : (byte >> 4);
    return double(half((b + 1) * kD)) * ls[b][i / 32] * q - double(half((b + 1) * kDmin)) * lm[b][i / 32];
  });
}

TEST(QuantBlocks, Q5_K) {
  // Layout: d dmin scales[12] qh[32] qs[128].
  auto blocks = random_bytes(2 * 176, 7);
  int ls[2][8], lm[2][8];
  for (int b = 0; b < 2; ++b) {
    for (int j = 0; j < 8; ++j) {
      ls[b][j] = (j * 13 + b * 3 + 7) % 64;
      lm[b][j] = (j * 19 + b * 11 + 2) % 64;
    }
    put_half(&blocks[b * 176], (b + 1) * kD);
    put_half(&blocks[b * 176 + 2], -(b + 1) * kDmin);
    pack_k4_scales(ls[b], lm[b], &blocks[b * 176 + 4]);
  }
  int b = -1;
  check(GgmlType::kQ5_K, blocks, [&](const uint8_t* blk, int i) {
    if (i == 0) ++b;
    // As Q4_K, plus a fifth bit: bit (i / 32) of qh[i % 32].
    const int g = i / 64, r = i % 64;
    const uint8_t byte = blk[48 + 32 * g + r % 32];
    const int low = r < 32 ? (byte & 15) : (byte >> 4);
    const int q = low + 16 * ((blk[16 + i % 32] >> (i / 32)) & 1);
    return double(half((b + 1) * kD)) * ls[b][i / 32] * q - double(half(-(b + 1) * kDmin)) * lm[b][i / 32];
  });
}

TEST(QuantBlocks, Q6_K) {
  // Layout: ql[128] qh[64] scales[16] (int8) d.
  auto blocks = random_bytes(2 * 210, 8);
  put_half(&blocks[208], kD);
  put_half(&blocks[210 + 208], -kD / 2);
  check(GgmlType::kQ6_K, blocks, [&](const uint8_t* blk, int i) {
    uint16_t d;
    std::memcpy(&d, blk + 208, 2);
    // Weight i: 128-element half h, quarter k = (i % 128) / 32, l = i % 32. Low 4 bits: quarters
    // 0/1 the low nibbles of ql[64h + l] / ql[64h + 32 + l], quarters 2/3 their high nibbles;
    // high 2 bits: bits 2k, 2k+1 of qh[32h + l]. Scale: int8 scales[i / 16].
    const int h = i / 128, k = (i % 128) / 32, l = i % 32;
    const uint8_t lo_byte = blk[64 * h + (k % 2) * 32 + l];
    const int low = k < 2 ? (lo_byte & 15) : (lo_byte >> 4);
    const int high = (blk[128 + 32 * h + l] >> (2 * k)) & 3;
    const int q = (low | (high << 4)) - 32;
    const int8_t scale = static_cast<int8_t>(blk[192 + i / 16]);
    return double(fp16_to_fp32(d)) * scale * q;
  });
}

TEST(QuantBlocks, LegacyQuantizersRoundTrip) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(256);
  for (float& v : x) v = normal(rng);
  for (GgmlType t : {GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1}) {
    std::vector<uint8_t> q(ggml_row_size(t, x.size()));
    quantize_row(t, x.data(), q.data(), x.size());
    std::vector<float> y(x.size());
    dequantize_row(t, q.data(), y.data(), y.size());
    // Each block spans its range in 15 (4-bit) or 31 (5-bit) steps: the error is at most half a
    // step (plus fp16 rounding of the scale).
    const int levels = t == GgmlType::kQ4_1 ? 15 : 31;
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float lo = x[b * 32], hi = x[b * 32];
      for (int j = 0; j < 32; ++j) {
        lo = std::min(lo, x[b * 32 + j]);
        hi = std::max(hi, x[b * 32 + j]);
      }
      const float range = t == GgmlType::kQ5_0 ? 2 * std::max(std::fabs(lo), std::fabs(hi)) : hi - lo;
      for (int j = 0; j < 32; ++j) {
        ASSERT_LE(std::fabs(y[b * 32 + j] - x[b * 32 + j]), 0.51f * range / levels + 0.01f * range)
            << ggml_type_name(t) << " element " << b * 32 + j;
      }
    }
  }
}

TEST(QuantBlocks, KQuantQuantizersRoundTrip) {
  // Normal weights over 8 super-blocks, one of them scaled up 100x (sub-block scales must adapt).
  std::mt19937 rng(10);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(8 * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (i / 256 == 3 ? 100.0f : 1.0f);
  // Bounds on the RMS error relative to the RMS of each super-block: a level step over a
  // sub-block's range is about range / levels, and uniform rounding error is step / sqrt(12).
  const std::pair<GgmlType, double> bounds[] = {{GgmlType::kQ2_K, 0.45}, {GgmlType::kQ3_K, 0.25}, {GgmlType::kQ4_K, 0.12},
                                                {GgmlType::kQ5_K, 0.06}, {GgmlType::kQ6_K, 0.03}};
  for (const auto& [t, bound] : bounds) {
    std::vector<uint8_t> q(ggml_row_size(t, x.size()));
    quantize_row(t, x.data(), q.data(), x.size());
    std::vector<float> y(x.size());
    dequantize_row(t, q.data(), y.data(), y.size());
    for (size_t b = 0; b < 8; ++b) {
      double err = 0.0, ref = 0.0;
      for (size_t i = b * 256; i < (b + 1) * 256; ++i) {
        err += (y[i] - x[i]) * double(y[i] - x[i]);
        ref += double(x[i]) * x[i];
      }
      const double rel = std::sqrt(err / ref);
      EXPECT_LT(rel, bound) << ggml_type_name(t) << " super-block " << b;
      EXPECT_GT(rel, bound / 20) << ggml_type_name(t) << " super-block " << b;  // it is lossy
    }
  }
}

TEST(QuantBlocks, KQuantQuantizersKeepZeroAndConstantBlocks) {
  for (GgmlType t : {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    for (const float value : {0.0f, 0.5f, -2.0f}) {
      std::vector<float> x(256, value);
      std::vector<uint8_t> q(ggml_row_size(t, 256));
      quantize_row(t, x.data(), q.data(), 256);
      std::vector<float> y(256);
      dequantize_row(t, q.data(), y.data(), 256);
      for (float v : y) ASSERT_NEAR(v, value, 0.02f * std::fabs(value) + 1e-6f) << ggml_type_name(t) << " " << value;
    }
  }
}

// ---- MXFP4 ----

// The OCP E2M1 value of a 4-bit code, from the format's fields: sign bit 3, exponent bits 2..1
// (bias 1; 0 means subnormal), mantissa bit 0.
double e2m1_value(int code) {
  const int exponent = (code >> 1) & 3, mantissa = code & 1;
  const double magnitude = exponent == 0 ? 0.5 * mantissa : std::ldexp(1.0 + 0.5 * mantissa, exponent - 1);
  return (code & 8) != 0 ? -magnitude : magnitude;
}

TEST(QuantBlocks, Mxfp4EveryCodeAndExponent) {
  // x = e2m1(code) * 2^(e - 127) for every code at exponents across the E8M0 range: 0 and 1 give
  // subnormal results, 127 the plain E2M1 values, the top ones overflow float to infinity (ggml
  // reads 255 as the scale 2^128, not NaN, so it does here too).
  const int exponents[] = {0, 1, 2, 3, 100, 126, 127, 128, 200, 252, 253, 254, 255};
  std::vector<uint8_t> blocks;
  for (const int e : exponents) {
    for (int variant = 0; variant < 2; ++variant) {
      // Variant 0: low nibble j, high nibble 15 - j; variant 1: random codes.
      std::vector<uint8_t> block = random_bytes(17, static_cast<uint32_t>(e * 2 + variant));
      block[0] = static_cast<uint8_t>(e);
      if (variant == 0) {
        for (int j = 0; j < 16; ++j) block[1 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
      }
      blocks.insert(blocks.end(), block.begin(), block.end());
    }
  }
  std::vector<uint8_t> unaligned(blocks.size() + 1);
  std::memcpy(unaligned.data() + 1, blocks.data(), blocks.size());
  const size_t n_blocks = blocks.size() / 17;
  std::vector<float> y(n_blocks * 32);
  dequantize_row(GgmlType::kMXFP4, unaligned.data() + 1, y.data(), y.size());
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks.data() + b * 17;
    for (int i = 0; i < 32; ++i) {
      const int code = legacy_nibble(block + 1, i);
      // The product is a small integer times a power of two: exact in double, and float's rounding
      // of it is ggml's float product (infinity above FLT_MAX).
      const float want = static_cast<float>(e2m1_value(code) * std::ldexp(1.0, block[0] - 127));
      ASSERT_EQ(y[b * 32 + i], want) << "e " << int(block[0]) << " code " << code;
      if (code == 8) {
        EXPECT_FALSE(std::signbit(y[b * 32 + i])) << "-0 decodes to +0, as ggml's table has it";
      }
    }
  }
  EXPECT_EQ(y[7], std::ldexp(6.0f, -127));  // e = 0, code 7: 6 * 2^-127, a subnormal float
}

struct Mxfp4Case {
  const char* what;
  std::vector<float> x;                // the first elements of a block; the rest are 0
  std::vector<uint8_t> bytes;          // the block llama.cpp's quantize_row_mxfp4_ref writes
};

// Expected blocks worked out by hand from llama.cpp's algorithm: e = floor(log2f(amax)) - 2 + 127,
// d = 2^(e - 128), each weight gets the code (0..15, values {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, ...} * d)
// at least distance, the lowest code on a tie.
std::vector<Mxfp4Case> mxfp4_cases() {
  std::vector<Mxfp4Case> cases;
  {
    // Every E2M1 value exactly (amax 6: e = 127, d = 1/2); element 16 + j holds code 15 - j. -0
    // (code 8) comes back as code 0, the lower code of the tie.
    Mxfp4Case c{"every value", std::vector<float>(32), {0x7F, 0xF0, 0xE1, 0xD2, 0xC3, 0xB4, 0xA5, 0x96, 0x07,
                                                        0x70, 0x69, 0x5A, 0x4B, 0x3C, 0x2D, 0x1E, 0x0F}};
    for (int j = 0; j < 16; ++j) {
      c.x[j] = static_cast<float>(e2m1_value(j));
      c.x[16 + j] = static_cast<float>(e2m1_value(15 - j));
    }
    cases.push_back(c);
  }
  {
    // amax 7 (e = 127, values 0, .5, 1, 1.5, 2, 3, 4, 6): 7 clips to 6; midpoints go to the lower
    // code (2.5 -> 2, -2.5 -> -2, 5 -> 4, +-0.25 -> 0, ...). Element 16 + j is -x[j].
    const std::vector<float> low = {7.0f, -7.0f, 2.5f, -2.5f, 5.0f, 0.25f, -0.25f, 0.75f,
                                    1.25f, 3.5f, 0.3f, -5.1f, 0.1f, -1.7f, 2.9f, -0.0f};
    Mxfp4Case c{"ties and clipping", std::vector<float>(32), {0x7F, 0xF7, 0x7F, 0xC4, 0x4C, 0xE6, 0x00, 0x00, 0x91,
                                                              0xA2, 0xD5, 0x91, 0x7F, 0x00, 0x3B, 0xD5, 0x00}};
    for (int j = 0; j < 16; ++j) {
      c.x[j] = low[j];
      c.x[16 + j] = -low[j];
    }
    cases.push_back(c);
  }
  // amax 1 exactly: e = 125, d = 1/8; 0.3 -> 0.25 (code 2).
  cases.push_back({"amax 1", {1.0f, -1.0f, 0.3f}, {0x7D, 0x06, 0x0E, 0x02}});
  // amax 0.99: floor(log2) = -1, e = 124, d = 1/16, top value 0.75: 0.99 clips to it (code 7);
  // 0.6 -> 0.5 (code 6), -0.3 -> -0.25 (code 12).
  cases.push_back({"amax just under 1", {0.99f, 0.6f, -0.3f}, {0x7C, 0x07, 0x06, 0x0C}});
  // amax = the float below 8: log2f rounds to 3, so e = 128 and d = 1 (8 is code 6; exact math
  // would give e = 127 and clip to 6). 5 is a tie of 4 and 6 -> code 4.
  cases.push_back({"amax just under 8", {std::nextafter(8.0f, 0.0f), 5.0f}, {0x80, 0x06, 0x04}});
  // amax 2^-125: e = 0, d = 2^-128 (subnormal): 2^-125 = 8d (code 6), 3 * 2^-128 = 3d (code 3).
  cases.push_back({"smallest exponent", {std::ldexp(1.0f, -125), std::ldexp(3.0f, -128)}, {0x00, 0x06, 0x03}});
  // amax 1.5 * 2^127: e = 252, d = 2^124: 12d (code 7); -2^125 = -2d (code 10).
  cases.push_back({"largest exponent", {std::ldexp(1.5f, 127), -std::ldexp(1.0f, 125)}, {0xFC, 0x07, 0x0A}});
  cases.push_back({"zero block", {}, {0x00}});
  for (Mxfp4Case& c : cases) {
    c.x.resize(32, 0.0f);
    c.bytes.resize(17, 0x00);
  }
  return cases;
}

TEST(QuantBlocks, Mxfp4QuantizeGivesLlamaCppBytes) {
  for (const Mxfp4Case& c : mxfp4_cases()) {
    std::vector<uint8_t> q(17);
    quantize_row(GgmlType::kMXFP4, c.x.data(), q.data(), 32);
    EXPECT_EQ(q, c.bytes) << c.what;
  }
}

TEST(QuantBlocks, Mxfp4QuantizeOutOfRangeIsDefined) {
  // Below 2^-125 ggml's exponent cast is undefined; it saturates at 0 here (UBSan builds check that
  // nothing undefined runs), and so do infinities at 255. NaN never becomes the block's amax.
  std::vector<float> x(32, 0.0f);
  x[0] = std::ldexp(1.0f, -130);
  x[1] = std::numeric_limits<float>::denorm_min();
  std::vector<uint8_t> q(17);
  quantize_row(GgmlType::kMXFP4, x.data(), q.data(), 32);
  EXPECT_EQ(q[0], 0);
  x[2] = std::numeric_limits<float>::infinity();
  quantize_row(GgmlType::kMXFP4, x.data(), q.data(), 32);
  EXPECT_EQ(q[0], 255);
  x.assign(32, 1.0f);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  quantize_row(GgmlType::kMXFP4, x.data(), q.data(), 32);
  EXPECT_EQ(q[0], 125);
  EXPECT_EQ(q[1 + 5], 0x60) << "the NaN gets code 0 (low nibble), element 21 stays 1 (code 6)";
}

TEST(QuantBlocks, Mxfp4QuantizerRoundTrip) {
  // Normal weights, some blocks scaled by 1e-3 or 1e3. With f = floor(log2(amax)) the block's
  // values are E2M1 * 2^(f - 2), top value 1.5 * 2^f: a weight above it is clipped to it, one
  // below is off by at most half the gap between neighbouring values (at most 2^(f-1) / 2).
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(64 * 32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (i / 32 % 3 == 1 ? 1e-3f : i / 32 % 3 == 2 ? 1e3f : 1.0f);
  std::vector<uint8_t> q(ggml_row_size(GgmlType::kMXFP4, x.size()));
  quantize_row(GgmlType::kMXFP4, x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  dequantize_row(GgmlType::kMXFP4, q.data(), y.data(), y.size());
  double err = 0.0, ref = 0.0;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const double f = std::floor(std::log2(amax));
    const double top = std::ldexp(1.5, static_cast<int>(f));
    for (int j = 0; j < 32; ++j) {
      const double v = x[b * 32 + j], got = y[b * 32 + j];
      const double a = std::fabs(v);
      // Gap between neighbouring values around |v|: 2^(f-3) below 2^(f-1) (0, .5, 1, 1.5 times
      // 2^(f-2)), then 2^(f-2) up to 2^f, then 2^(f-1).
      const double gap = a < std::ldexp(1.0, static_cast<int>(f) - 1) ? std::ldexp(1.0, static_cast<int>(f) - 3)
                         : a < std::ldexp(1.0, static_cast<int>(f)) ? std::ldexp(1.0, static_cast<int>(f) - 2)
                                                                       : std::ldexp(1.0, static_cast<int>(f) - 1);
      const double bound = a > top ? a - top : gap / 2;
      ASSERT_LE(std::fabs(got - v), bound * (1 + 1e-6)) << "element " << b * 32 + j << " amax " << amax;
      ASSERT_EQ(std::signbit(got) && got != 0, std::signbit(v) && got != 0) << "element " << b * 32 + j;
      err += (got - v) * (got - v);
      ref += v * v;
    }
  }
  const double rel = std::sqrt(err / ref);
  EXPECT_LT(rel, 0.2);
  EXPECT_GT(rel, 0.01);  // it is lossy
}

// ---- IQ4_NL, IQ4_XS ----

// llama.cpp's kvalues_iq4nl, the value of each 4-bit index.
constexpr int kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// IQ4_XS block bytes: d (2), scales_h (2), scales_l (4), qs (128). Sub-block j's 6-bit scale: low 4
// bits from nibble j % 2 of scales_l[j / 2], high 2 from bits 2j.. of scales_h.
int iq4_xs_ls(const uint8_t* blk, int j) {
  const int scales_h = blk[2] | blk[3] << 8;
  return ((blk[4 + j / 2] >> (4 * (j % 2))) & 15) | (((scales_h >> (2 * j)) & 3) << 4);
}

TEST(QuantBlocks, Iq4Nl) {
  auto blocks = random_bytes(3 * 18, 21);
  for (int b = 0; b < 3; ++b) put_half(&blocks[b * 18], kD * (b - 1.5f));
  int b = -1;
  check(GgmlType::kIQ4_NL, blocks, [&](const uint8_t* blk, int i) {
    if (i == 0) ++b;
    return double(half(kD * (b - 1.5f))) * kIq4Values[legacy_nibble(blk + 2, i)];
  });
}

TEST(QuantBlocks, Iq4Xs) {
  // Weight = (d * (ls - 32)) * value. Random scale bytes cover ls from 0 to 63, so negative and zero
  // multipliers too.
  auto blocks = random_bytes(2 * 136, 22);
  put_half(&blocks[0], kD);
  put_half(&blocks[136], -3 * kD);
  int b = -1;
  check(GgmlType::kIQ4_XS, blocks, [&](const uint8_t* blk, int i) {
    if (i == 0) ++b;
    const int j = i / 32, e = i % 32;
    const float dl = half(b == 0 ? kD : -3 * kD) * static_cast<float>(iq4_xs_ls(blk, j) - 32);
    return double(dl) * kIq4Values[legacy_nibble(blk + 8 + 16 * j, e)];
  });
}

// Each weight decodes to the value nearest it at its block's stored scale (IQ4_NL) or its
// sub-block's (IQ4_XS): the quantizer's index search, checked by brute force over the 16 values.
// And the non-linear grid beats Q4_0's even one on normal weights, which is what it is for.
TEST(QuantBlocks, Iq4QuantizersPickTheNearestValueAndBeatQ4_0) {
  std::mt19937 rng(12);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(32 * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (i / 256 % 2 == 1 ? 1e-3f : 1.0f);
  auto rms_error = [&](GgmlType t) {
    std::vector<uint8_t> q(ggml_row_size(t, x.size()));
    quantize_row(t, x.data(), q.data(), x.size());
    std::vector<float> y(x.size());
    dequantize_row(t, q.data(), y.data(), y.size());
    double err = 0, ref = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
      ref += double(x[i]) * x[i];
      if (t == GgmlType::kQ4_0) continue;
      // The sub-block's scale: the stored value of the element's block over its index's value.
      const uint8_t* blk = t == GgmlType::kIQ4_NL ? q.data() + i / 32 * 18 : q.data() + i / 256 * 136;
      float d = fp16_to_fp32(static_cast<uint16_t>(blk[0] | blk[1] << 8));
      if (t == GgmlType::kIQ4_XS) {
        d *= static_cast<float>(iq4_xs_ls(blk, static_cast<int>(i % 256 / 32)) - 32);
      }
      double best = 1e30;
      for (int v : kIq4Values) best = std::min(best, std::fabs(double(d * static_cast<float>(v)) - x[i]));
      EXPECT_LE(std::fabs(double(y[i]) - x[i]), best * (1 + 1e-6) + 1e-12) << ggml_type_name(t) << " element " << i;
    }
    return std::sqrt(err / ref);
  };
  const double q4_0 = rms_error(GgmlType::kQ4_0), nl = rms_error(GgmlType::kIQ4_NL), xs = rms_error(GgmlType::kIQ4_XS);
  EXPECT_LT(nl, q4_0);
  EXPECT_LT(xs, q4_0 * 1.1);  // 6-bit sub-block scales cost IQ4_XS a little against a half per 32
  EXPECT_GT(nl, 0.01);        // lossy
  EXPECT_LT(xs, 0.15);
}

TEST(QuantBlocks, Iq4QuantizeZeroAndNanBlocksAreDefined) {
  std::vector<float> x(256, 0.0f);
  std::vector<uint8_t> q(ggml_row_size(GgmlType::kIQ4_NL, 256), 0xAB);  // 144 bytes: IQ4_XS needs 136
  std::vector<float> y(256, 1.0f);
  for (GgmlType t : {GgmlType::kIQ4_NL, GgmlType::kIQ4_XS}) {
    quantize_row(t, x.data(), q.data(), x.size());
    dequantize_row(t, q.data(), y.data(), y.size());
    for (float v : y) ASSERT_EQ(v, 0.0f) << ggml_type_name(t);
  }
  x.assign(256, 0.5f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  for (GgmlType t : {GgmlType::kIQ4_NL, GgmlType::kIQ4_XS}) {
    quantize_row(t, x.data(), q.data(), x.size());  // UBSan builds check that nothing undefined runs
    dequantize_row(t, q.data(), y.data(), y.size());
    EXPECT_NEAR(y[100], 0.5f, 0.05f) << ggml_type_name(t) << ": a NaN in one block leaves the others";
  }
}

TEST(QuantBlocks, PartialSuperBlockIsRejected) {
  std::vector<uint8_t> q(144);
  std::vector<float> y(256);
  try {
    dequantize_row(GgmlType::kQ4_K, q.data(), y.data(), 128);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("block size 256"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vks
