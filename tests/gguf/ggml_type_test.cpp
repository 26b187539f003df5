// ggml type traits, fp16/bf16 conversions and the Q8_0/Q4_0 references on hand-made blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/common/error.h"
#include "engine/gguf/ggml_type.h"

namespace vks {
namespace {

TEST(GgmlTypeTraits, SizesAndNames) {
  EXPECT_EQ(ggml_type_traits(0)->type_size, 4u);
  EXPECT_EQ(ggml_type_traits(2)->block_size, 32u);
  EXPECT_EQ(ggml_type_traits(2)->type_size, 18u);
  EXPECT_EQ(ggml_type_traits(8)->type_size, 34u);
  EXPECT_EQ(ggml_type_traits(30)->name, "bf16");
  EXPECT_EQ(ggml_type_traits(12)->name, "q4_K");
  EXPECT_EQ(ggml_type_traits(12)->type_size, 144u);
  EXPECT_TRUE(ggml_type_traits(12)->supported);
  EXPECT_TRUE(ggml_type_traits(1)->supported);
  EXPECT_TRUE(ggml_type_traits(20)->supported);  // iq4_nl
  EXPECT_EQ(ggml_type_traits(23)->name, "iq4_xs");
  EXPECT_EQ(ggml_type_traits(23)->type_size, 136u);
  EXPECT_FALSE(ggml_type_traits(21)->supported);  // iq3_s
  EXPECT_FALSE(ggml_type_traits(15)->supported);  // q8_K: activations only
  EXPECT_EQ(ggml_type_traits(39)->name, "mxfp4");
  EXPECT_EQ(ggml_type_traits(39)->block_size, 32u);
  EXPECT_EQ(ggml_type_traits(39)->type_size, 17u);
  EXPECT_TRUE(ggml_type_traits(39)->supported);
  EXPECT_EQ(ggml_row_size(GgmlType::kMXFP4, 2880), 1530u);  // a gpt-oss expert row: 90 blocks
  EXPECT_FALSE(ggml_type_traits(4).has_value());   // removed upstream
  EXPECT_FALSE(ggml_type_traits(999).has_value());
  EXPECT_EQ(ggml_type_name(GgmlType::kQ8_0), "q8_0");
  EXPECT_EQ(ggml_row_size(GgmlType::kQ4_0, 64), 36u);
  EXPECT_EQ(ggml_row_size(GgmlType::kQ8_0, 32), 34u);
  EXPECT_EQ(ggml_row_size(GgmlType::kF16, 10), 20u);
  EXPECT_EQ(ggml_row_size(GgmlType::kF32, 172), 688u);
}

TEST(GgmlTypeTraits, TableIsConsistent) { EXPECT_TRUE(vks::ggml_type_table_is_consistent()); }

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));         // smallest normal
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));         // smallest subnormal
  EXPECT_EQ(fp16_to_fp32(0x03FF), 1023.0f * std::ldexp(1.0f, -24));  // largest subnormal
  EXPECT_EQ(fp16_to_fp32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_fp32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
  EXPECT_EQ(fp16_to_fp32(0x8000), 0.0f);
}

TEST(Fp16, RoundingToNearestEven) {
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);   // below the halfway point to 65536
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);   // halfway: even is infinity
  EXPECT_EQ(fp32_to_fp16(1e9f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie -> even (down)
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);             // tie between 0 and 1 ulp -> 0
  EXPECT_EQ(fp32_to_fp16(3 * std::ldexp(1.0f, -25)), 0x0002);         // tie between 1 and 2 ulps -> 2
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-std::ldexp(1.0f, -30)), 0x8000);
}

TEST(Fp16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << h;
  }
}

TEST(Bf16, ConversionsAndRounding) {
  EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0xC040), -3.0f);
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie -> even (down)
  EXPECT_EQ(fp32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  uint32_t snan_bits = 0x7F800001;
  float snan;
  std::memcpy(&snan, &snan_bits, 4);
  EXPECT_EQ(fp32_to_bf16(snan), 0x7FC0);  // NaN stays NaN (quieted), never becomes infinity
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(snan))));
}

TEST(Q8_0, DequantizeHandMadeBlock) {
  BlockQ8_0 b{};
  b.d = 0x3800;  // 0.5
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j - 16);
  b.qs[31] = -128;
  std::vector<float> out(32);
  dequantize_row(GgmlType::kQ8_0, &b, out.data(), 32);
  for (int j = 0; j < 31; ++j) EXPECT_EQ(out[j], 0.5f * static_cast<float>(j - 16)) << j;
  EXPECT_EQ(out[31], -64.0f);
}

TEST(Q8_0, QuantizeKnownBlock) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);  // amax 16
  BlockQ8_0 b{};
  quantize_row(GgmlType::kQ8_0, x.data(), &b, 32);
  EXPECT_EQ(b.d, fp32_to_fp16(16.0f / 127.0f));
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[16], 0);
  EXPECT_EQ(b.qs[17], 8);    // round(1 * 127/16 = 7.94)
  EXPECT_EQ(b.qs[31], 119);  // round(15 * 127/16 = 119.06)
  EXPECT_EQ(b.qs[8], -64);   // round(-8 * 127/16 = -63.5) -> away from zero, as roundf
}

TEST(Q8_0, ZeroBlock) {
  std::vector<float> x(32, 0.0f), y(32, 1.0f);
  BlockQ8_0 b{};
  quantize_row(GgmlType::kQ8_0, x.data(), &b, 32);
  EXPECT_EQ(b.d, 0);
  dequantize_row(GgmlType::kQ8_0, &b, y.data(), 32);
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(Q4_0, DequantizeHandMadeBlockNibbleOrder) {
  BlockQ4_0 b{};
  b.d = 0x4000;  // 2.0
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> out(32);
  dequantize_row(GgmlType::kQ4_0, &b, out.data(), 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 2.0f * static_cast<float>(j - 8)) << j;              // low nibbles: elements 0..15
    EXPECT_EQ(out[j + 16], 2.0f * static_cast<float>(7 - j)) << j + 16;    // high nibbles: elements 16..31
  }
}

TEST(Q4_0, QuantizeScaleFromSignedMax) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j % 16 - 8);  // integers in [-8, 7], max |x| is -8
  BlockQ4_0 b{};
  quantize_row(GgmlType::kQ4_0, x.data(), &b, 32);
  EXPECT_EQ(fp16_to_fp32(b.d), 1.0f);  // -8 / -8
  EXPECT_EQ(b.qs[0], 0x00);            // x[0] = -8 -> 0 and x[16] = -8 -> 0
  EXPECT_EQ(b.qs[15], 0xFF);           // x[15] = 7 -> 15 and x[31] = 7 -> 15
  std::vector<float> y(32);
  dequantize_row(GgmlType::kQ4_0, &b, y.data(), 32);
  EXPECT_EQ(x, y);

  // Largest magnitude positive: d is negative and the extreme maps to nibble 0.
  std::vector<float> p(32, 0.0f);
  p[5] = 16.0f;
  p[20] = -16.0f + 1.0f;
  quantize_row(GgmlType::kQ4_0, p.data(), &b, 32);
  EXPECT_EQ(fp16_to_fp32(b.d), -2.0f);
  EXPECT_EQ(b.qs[5] & 0x0F, 0);
  EXPECT_EQ(b.qs[4] >> 4, 15);  // -15 * -0.5 + 8.5 = 16 -> clamped to 15
  dequantize_row(GgmlType::kQ4_0, &b, y.data(), 32);
  EXPECT_EQ(y[5], 16.0f);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[20], -14.0f);
}

TEST(Quantize, NonFiniteInputIsDefined) {
  std::vector<float> x(32, 1.0f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[4] = std::numeric_limits<float>::infinity();
  BlockQ8_0 b8{};
  BlockQ4_0 b4{};
  quantize_row(GgmlType::kQ8_0, x.data(), &b8, 32);  // must not be UB (UBSan build checks)
  quantize_row(GgmlType::kQ4_0, x.data(), &b4, 32);
  SUCCEED();
}

// Max error per block of ggml's reference quantizers, including the fp16 rounding of the scale.
float max_block_error(GgmlType t, const float* x) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  return t == GgmlType::kQ8_0 ? amax / 127.0f * 0.5f + amax * 1e-3f : amax / 8.0f * 1.0f + amax * 1e-3f;
}

TEST(Quantize, RoundTripErrorBounds) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int n = 32 * 256;
  std::vector<float> x(n), y(n);
  for (float& v : x) v = normal(rng) * (rng() % 2 ? 0.01f : 3.0f);
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    std::vector<uint8_t> q(ggml_row_size(t, n));
    quantize_row(t, x.data(), q.data(), n);
    dequantize_row(t, q.data(), y.data(), n);
    double err_sq = 0, ref_sq = 0;
    for (int b = 0; b < n / 32; ++b) {
      const float bound = max_block_error(t, &x[b * 32]);
      for (int j = 0; j < 32; ++j) {
        const float e = std::fabs(x[b * 32 + j] - y[b * 32 + j]);
        ASSERT_LE(e, bound) << ggml_type_name(t) << " element " << b * 32 + j;
        err_sq += e * e;
        ref_sq += x[b * 32 + j] * x[b * 32 + j];
      }
    }
    const double rel = std::sqrt(err_sq / ref_sq);
    EXPECT_LT(rel, t == GgmlType::kQ8_0 ? 0.01 : 0.12) << ggml_type_name(t);
    EXPECT_GT(rel, 0.0) << ggml_type_name(t);
  }
  for (GgmlType t : {GgmlType::kF16, GgmlType::kBF16, GgmlType::kF32}) {
    std::vector<uint8_t> q(ggml_row_size(t, n));
    quantize_row(t, x.data(), q.data(), n);
    dequantize_row(t, q.data(), y.data(), n);
    const float rel_bound = t == GgmlType::kF16 ? std::ldexp(1.0f, -11) : t == GgmlType::kBF16 ? std::ldexp(1.0f, -8) : 0.0f;
    for (int k = 0; k < n; ++k) {
      // fp16 subnormals lose relative precision: allow an absolute 2^-25 as well.
      ASSERT_LE(std::fabs(x[k] - y[k]), std::fabs(x[k]) * rel_bound + std::ldexp(1.0f, -25)) << ggml_type_name(t);
    }
  }
}

TEST(Quantize, RejectsUnsupportedAndPartialBlocks) {
  std::vector<float> x(64);
  std::vector<uint8_t> q(256);
  try {
    dequantize_row(GgmlType::kQ8_1, q.data(), x.data(), 32);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("q8_1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(supported_ggml_type_names()), std::string::npos) << e.what();
  }
  EXPECT_THROW(quantize_row(GgmlType::kQ8_0, x.data(), q.data(), 33), Error);
  EXPECT_THROW(quantize_row(GgmlType::kQ8_1, x.data(), q.data(), 32), Error);
}

TEST(GgmlTypeTable, NamesParseBackAndListSupportedTypes) {
  for (uint32_t id = 0; id < 64; ++id) {
    const auto traits = ggml_type_traits(id);
    if (!traits) continue;
    EXPECT_EQ(static_cast<uint32_t>(traits->type), id);
    EXPECT_EQ(ggml_type_from_name(traits->name), traits->type) << traits->name;
    EXPECT_EQ(traits->supported, traits->dequantize != nullptr) << traits->name;
  }
  EXPECT_EQ(ggml_type_from_name("Q4_k"), GgmlType::kQ4_K);
  EXPECT_EQ(ggml_type_from_name("BF16"), GgmlType::kBF16);
  EXPECT_FALSE(ggml_type_from_name("q4_K_M").has_value());  // a file recipe, not a tensor type
  EXPECT_FALSE(ggml_type_from_name("").has_value());
  EXPECT_EQ(supported_ggml_type_names(), "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, mxfp4, iq4_nl, iq4_xs");
  EXPECT_EQ(supported_ggml_types().size(), 16u);
}

}  // namespace
}  // namespace vks
