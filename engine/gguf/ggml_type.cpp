#include "engine/gguf/ggml_type.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/common/error.h"

namespace vks {
namespace {

struct TypeRow {
  uint32_t id;
  GgmlTypeTraits traits;
};

// Every type id ggml defines (ids 4, 5, 31..33 and 36..38 were removed upstream). Sizes of the
// types we cannot compute with still matter: the GGUF reader uses them to bounds-check tensors.
constexpr TypeRow kTypes[] = {
    {0, {"f32", 1, 4, true}},        {1, {"f16", 1, 2, true}},
    {2, {"q4_0", 32, 18, true}},     {3, {"q4_1", 32, 20, false}},
    {6, {"q5_0", 32, 22, false}},    {7, {"q5_1", 32, 24, false}},
    {8, {"q8_0", 32, 34, true}},     {9, {"q8_1", 32, 36, false}},
    {10, {"q2_K", 256, 84, false}},  {11, {"q3_K", 256, 110, false}},
    {12, {"q4_K", 256, 144, false}}, {13, {"q5_K", 256, 176, false}},
    {14, {"q6_K", 256, 210, false}}, {15, {"q8_K", 256, 292, false}},
    {16, {"iq2_xxs", 256, 66, false}}, {17, {"iq2_xs", 256, 74, false}},
    {18, {"iq3_xxs", 256, 98, false}}, {19, {"iq1_s", 256, 50, false}},
    {20, {"iq4_nl", 32, 18, false}},   {21, {"iq3_s", 256, 110, false}},
    {22, {"iq2_s", 256, 82, false}},   {23, {"iq4_xs", 256, 136, false}},
    {24, {"i8", 1, 1, false}},       {25, {"i16", 1, 2, false}},
    {26, {"i32", 1, 4, false}},      {27, {"i64", 1, 8, false}},
    {28, {"f64", 1, 8, false}},      {29, {"iq1_m", 256, 56, false}},
    {30, {"bf16", 1, 2, true}},      {34, {"tq1_0", 256, 54, false}},
    {35, {"tq2_0", 256, 66, false}}, {39, {"mxfp4", 32, 17, false}},
};

float f32_from_bits(uint32_t w) { return std::bit_cast<float>(w); }
uint32_t f32_to_bits(float f) { return std::bit_cast<uint32_t>(f); }

// float -> int conversion with a defined result for NaN and out-of-range values (the plain cast
// would be undefined behaviour, and random weights from a hostile file can be anything).
int clamp_to_int(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo))) return v != v ? 0 : lo;  // NaN -> 0
  if (v > static_cast<float>(hi)) return hi;
  return static_cast<int>(v);
}

void require_supported(GgmlType t, uint64_t n, const char* what) {
  const auto traits = ggml_type_traits(static_cast<uint32_t>(t));
  if (!traits || !traits->supported) {
    throw Error(ErrorCode::kUnsupported,
                std::string(what) + ": tensor type " + std::string(ggml_type_name(t)) +
                    " is not supported (supported: f32, f16, bf16, q8_0, q4_0)");
  }
  if (n % traits->block_size != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + ": " + std::to_string(n) + " elements is not a multiple of the " +
                    std::string(traits->name) + " block size " + std::to_string(traits->block_size));
  }
}

// Blocks are copied out byte-wise: inside a mapped file they need not be 2-byte aligned.
void dequantize_q8_0(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    BlockQ8_0 block;
    std::memcpy(&block, src + b * sizeof(BlockQ8_0), sizeof(BlockQ8_0));
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < 32; ++j) dst[b * 32 + j] = static_cast<float>(block.qs[j]) * d;
  }
}

void dequantize_q4_0(const uint8_t* src, float* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    BlockQ4_0 block;
    std::memcpy(&block, src + b * sizeof(BlockQ4_0), sizeof(BlockQ4_0));
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < 16; ++j) {
      const int x0 = (block.qs[j] & 0x0F) - 8;
      const int x1 = (block.qs[j] >> 4) - 8;
      dst[b * 32 + j] = static_cast<float>(x0) * d;
      dst[b * 32 + j + 16] = static_cast<float>(x1) * d;
    }
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
    std::memcpy(dst + b * sizeof(BlockQ8_0), &block, sizeof(BlockQ8_0));
  }
}

// ggml's quantize_row_q4_0_ref: the scale maps the element of largest magnitude to -8.
void quantize_q4_0(const float* src, uint8_t* dst, uint64_t n_blocks) {
  for (uint64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * 32;
    BlockQ4_0 block;
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block.d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      // ggml: MIN(15, (int8_t)(x * id + 8.5f)); the int8 cast truncates toward zero.
      const int q0 = std::min(15, clamp_to_int(x[j] * id + 8.5f, -128, 127));
      const int q1 = std::min(15, clamp_to_int(x[j + 16] * id + 8.5f, -128, 127));
      block.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
    }
    std::memcpy(dst + b * sizeof(BlockQ4_0), &block, sizeof(BlockQ4_0));
  }
}

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  for (const TypeRow& row : kTypes) {
    if (row.id == type_id) return row.traits;
  }
  return std::nullopt;
}

std::string_view ggml_type_name(GgmlType t) {
  const auto traits = ggml_type_traits(static_cast<uint32_t>(t));
  return traits ? traits->name : std::string_view("unknown");
}

size_t ggml_row_size(GgmlType t, uint64_t n) {
  const auto traits = ggml_type_traits(static_cast<uint32_t>(t));
  if (!traits) return 0;
  return static_cast<size_t>(n / traits->block_size * traits->type_size);
}

// The two conversions below are ggml's (from Maratyszcza's FP16 library): exact for every input,
// including subnormals, infinities and NaN, and rounding to nearest even.
float fp16_to_fp32(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = 0x1.0p-112f;
  const float normalized_value = f32_from_bits((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float magic_bias = 0.5f;
  const float denormalized_value = f32_from_bits((two_w >> 17) | magic_mask) - magic_bias;
  const uint32_t denormalized_cutoff = 1u << 27;
  const uint32_t result =
      sign | (two_w < denormalized_cutoff ? f32_to_bits(denormalized_value) : f32_to_bits(normalized_value));
  return f32_from_bits(result);
}

uint16_t fp32_to_fp16(float f) {
  const float scale_to_inf = f32_from_bits(0x77800000u);
  const float scale_to_zero = f32_from_bits(0x08800000u);
  float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;
  const uint32_t w = f32_to_bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = f32_from_bits((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = f32_to_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

float bf16_to_fp32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

uint16_t fp32_to_bf16(float f) {
  const uint32_t u = f32_to_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 64u);  // quiet NaN
  return static_cast<uint16_t>((u + (0x7FFFu + ((u >> 16) & 1u))) >> 16);
}

void dequantize_row(GgmlType t, const void* src, float* dst, uint64_t n) {
  require_supported(t, n, "dequantize_row");
  switch (t) {
    case GgmlType::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case GgmlType::kF16: {
      const auto* p = static_cast<const uint8_t*>(src);
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = fp16_to_fp32(h);
      }
      return;
    }
    case GgmlType::kBF16: {
      const auto* p = static_cast<const uint8_t*>(src);
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = bf16_to_fp32(h);
      }
      return;
    }
    case GgmlType::kQ8_0:
      dequantize_q8_0(static_cast<const uint8_t*>(src), dst, n / 32);
      return;
    case GgmlType::kQ4_0:
      dequantize_q4_0(static_cast<const uint8_t*>(src), dst, n / 32);
      return;
    default:
      break;
  }
  throw Error(ErrorCode::kInternal, "dequantize_row: unhandled supported type");
}

void quantize_row(GgmlType t, const float* src, void* dst, uint64_t n) {
  require_supported(t, n, "quantize_row");
  switch (t) {
    case GgmlType::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case GgmlType::kF16: {
      auto* p = static_cast<uint8_t*>(dst);
      for (uint64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_fp16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    }
    case GgmlType::kBF16: {
      auto* p = static_cast<uint8_t*>(dst);
      for (uint64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_bf16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    }
    case GgmlType::kQ8_0:
      quantize_q8_0(src, static_cast<uint8_t*>(dst), n / 32);
      return;
    case GgmlType::kQ4_0:
      quantize_q4_0(src, static_cast<uint8_t*>(dst), n / 32);
      return;
    default:
      break;
  }
  throw Error(ErrorCode::kInternal, "quantize_row: unhandled supported type");
}

}  // namespace vks
