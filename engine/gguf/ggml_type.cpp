#include "engine/gguf/ggml_type.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/common/error.h"
#include "engine/gguf/quant_rows.h"

namespace vks {
namespace {

using namespace quant;

// THE table of weight formats. Every type id ggml defines is here (ids 4, 5, 31..33 and 36..38
// were removed upstream): sizes of the types vkstream cannot compute with still matter, as the
// GGUF reader bounds-checks every tensor with them. A new type is a row here, its block layout in
// quant_blocks.h and its converters in quant_legacy.cpp / quant_kquants.cpp / quant_mxfp4.cpp / quant_iq4.cpp.
//  type               name       block  bytes  dequantize        quantize        row_dot supported
constexpr GgmlTypeTraits kTypes[] = {
    {GgmlType::kF32,   "f32",     1,   4,   dequantize_f32,  quantize_f32,  nullptr, true},
    {GgmlType::kF16,   "f16",     1,   2,   dequantize_f16,  quantize_f16,  nullptr, true},
    {GgmlType::kBF16,  "bf16",    1,   2,   dequantize_bf16, quantize_bf16, nullptr, true},
    {GgmlType::kQ8_0,  "q8_0",    32,  34,  dequantize_q8_0, quantize_q8_0, nullptr, true},
    {GgmlType::kQ4_0,  "q4_0",    32,  18,  dequantize_q4_0, quantize_q4_0, nullptr, true},
    {GgmlType::kQ4_1,  "q4_1",    32,  20,  dequantize_q4_1, quantize_q4_1, nullptr, true},
    {GgmlType::kQ5_0,  "q5_0",    32,  22,  dequantize_q5_0, quantize_q5_0, nullptr, true},
    {GgmlType::kQ5_1,  "q5_1",    32,  24,  dequantize_q5_1, quantize_q5_1, nullptr, true},
    {GgmlType::kQ2_K,  "q2_K",    256, 84,  dequantize_q2_K, quantize_q2_K, nullptr, true},
    {GgmlType::kQ3_K,  "q3_K",    256, 110, dequantize_q3_K, quantize_q3_K, nullptr, true},
    {GgmlType::kQ4_K,  "q4_K",    256, 144, dequantize_q4_K, quantize_q4_K, nullptr, true},
    {GgmlType::kQ5_K,  "q5_K",    256, 176, dequantize_q5_K, quantize_q5_K, nullptr, true},
    {GgmlType::kQ6_K,  "q6_K",    256, 210, dequantize_q6_K, quantize_q6_K, nullptr, true},
    {GgmlType::kMXFP4, "mxfp4",   32,  17,  dequantize_mxfp4, quantize_mxfp4, nullptr, true},
    {GgmlType::kIQ4_NL, "iq4_nl", 32,  18,  dequantize_iq4_nl, quantize_iq4_nl, nullptr, true},
    {GgmlType::kIQ4_XS, "iq4_xs", 256, 136, dequantize_iq4_xs, quantize_iq4_xs, nullptr, true},
    // Types ggml defines that vkstream does not compute with (activation-only, integer or exotic).
    {GgmlType::kQ8_1,  "q8_1",    32,  36,  nullptr, nullptr, nullptr, false},
    {GgmlType::kQ8_K,  "q8_K",    256, 292, nullptr, nullptr, nullptr, false},
    {GgmlType{16},     "iq2_xxs", 256, 66,  nullptr, nullptr, nullptr, false},
    {GgmlType{17},     "iq2_xs",  256, 74,  nullptr, nullptr, nullptr, false},
    {GgmlType{18},     "iq3_xxs", 256, 98,  nullptr, nullptr, nullptr, false},
    {GgmlType{19},     "iq1_s",   256, 50,  nullptr, nullptr, nullptr, false},
    {GgmlType{21},     "iq3_s",   256, 110, nullptr, nullptr, nullptr, false},
    {GgmlType{22},     "iq2_s",   256, 82,  nullptr, nullptr, nullptr, false},
    {GgmlType::kI8,    "i8",      1,   1,   nullptr, nullptr, nullptr, false},
    {GgmlType::kI16,   "i16",     1,   2,   nullptr, nullptr, nullptr, false},
    {GgmlType::kI32,   "i32",     1,   4,   nullptr, nullptr, nullptr, false},
    {GgmlType::kI64,   "i64",     1,   8,   nullptr, nullptr, nullptr, false},
    {GgmlType::kF64,   "f64",     1,   8,   nullptr, nullptr, nullptr, false},
    {GgmlType{29},     "iq1_m",   256, 56,  nullptr, nullptr, nullptr, false},
    {GgmlType{34},     "tq1_0",   256, 54,  nullptr, nullptr, nullptr, false},
    {GgmlType{35},     "tq2_0",   256, 66,  nullptr, nullptr, nullptr, false},
};


float f32_from_bits(uint32_t w) { return std::bit_cast<float>(w); }
uint32_t f32_to_bits(float f) { return std::bit_cast<uint32_t>(f); }

const GgmlTypeTraits* find_row(GgmlType t) {
  for (const GgmlTypeTraits& row : kTypes) {
    if (row.type == t) return &row;
  }
  return nullptr;
}

// The table row of t if n elements of it can be converted; throws otherwise.
const GgmlTypeTraits& require_convertible(GgmlType t, uint64_t n, bool quantizing, const char* what) {
  const GgmlTypeTraits* row = find_row(t);
  if (row == nullptr || (quantizing ? row->quantize == nullptr : row->dequantize == nullptr)) {
    std::string list;
    for (const GgmlTypeTraits& r : kTypes) {
      if (quantizing ? r.quantize != nullptr : r.supported) list += (list.empty() ? "" : ", ") + std::string(r.name);
    }
    throw Error(ErrorCode::kUnsupported, std::string(what) + ": tensor type " + std::string(ggml_type_name(t)) +
                                             " is not supported (supported: " + list + ")");
  }
  if (n % row->block_size != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + ": " + std::to_string(n) + " elements is not a multiple of the " +
                    std::string(row->name) + " block size " + std::to_string(row->block_size));
  }
  return *row;
}

}  // namespace

namespace quant {

void dequantize_f32(const uint8_t* src, float* dst, uint64_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void dequantize_f16(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = fp16_to_fp32(h);
  }
}

void dequantize_bf16(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = bf16_to_fp32(h);
  }
}

void quantize_f32(const float* src, uint8_t* dst, uint64_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void quantize_f16(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_fp16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void quantize_bf16(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

}  // namespace quant

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  const GgmlTypeTraits* row = find_row(static_cast<GgmlType>(type_id));
  if (row == nullptr) return std::nullopt;
  return *row;
}

std::string_view ggml_type_name(GgmlType t) {
  const GgmlTypeTraits* row = find_row(t);
  return row != nullptr ? row->name : std::string_view("unknown");
}

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  for (const GgmlTypeTraits& row : kTypes) {
    if (row.name.size() != name.size()) continue;
    bool same = true;
    for (size_t k = 0; k < name.size() && same; ++k) {
      same = std::tolower(static_cast<unsigned char>(name[k])) == std::tolower(static_cast<unsigned char>(row.name[k]));
    }
    if (same) return row.type;
  }
  return std::nullopt;
}

std::vector<GgmlType> supported_ggml_types() {
  std::vector<GgmlType> types;
  for (const GgmlTypeTraits& row : kTypes) {
    if (row.supported) types.push_back(row.type);
  }
  return types;
}

std::string supported_ggml_type_names() {
  std::string list;
  for (const GgmlType t : supported_ggml_types()) list += (list.empty() ? "" : ", ") + std::string(ggml_type_name(t));
  return list;
}

size_t ggml_row_size(GgmlType t, uint64_t n) {
  const GgmlTypeTraits* row = find_row(t);
  if (row == nullptr) return 0;
  return static_cast<size_t>(n / row->block_size * row->type_size);
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
  const GgmlTypeTraits& row = require_convertible(t, n, false, "dequantize_row");
  row.dequantize(static_cast<const uint8_t*>(src), dst, n / row.block_size);
}

void quantize_row(GgmlType t, const float* src, void* dst, uint64_t n) {
  const GgmlTypeTraits& row = require_convertible(t, n, true, "quantize_row");
  row.quantize(src, static_cast<uint8_t*>(dst), n / row.block_size);
}

// Every supported row must have a converter, every other row none. (A run-time check, tested in
// ggml_type_test: comparing function pointers is not a constant expression under UBSan.)
bool ggml_type_table_is_consistent() {
  for (const GgmlTypeTraits& t : kTypes) {
    if (t.supported != (t.dequantize != nullptr)) return false;
    if (t.block_size == 0 || t.type_size == 0) return false;
  }
  return true;
}

}  // namespace vks
