#pragma once
// ggml tensor types as stored in GGUF. One table (kTypes in ggml_type.cpp) describes every type:
// its name, block size, bytes per block, CPU dequantization/quantization and whether vkstream
// computes with it. Everything that names, parses or lists types derives from that table.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/quant_blocks.h"

namespace vks {

enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
  kIQ4_NL = 20, kIQ4_XS = 23,
  kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kBF16 = 30,
  kMXFP4 = 39,
};

// Converts n_blocks whole blocks (src: n_blocks * type_size bytes, any alignment) to floats.
using DequantizeBlocksFn = void (*)(const uint8_t* src, float* dst, uint64_t n_blocks);
// Quantizes n_blocks * block_size floats into blocks.
using QuantizeBlocksFn = void (*)(const float* src, uint8_t* dst, uint64_t n_blocks);
// Dot product of a row of n_blocks blocks with n_blocks * block_size floats, without a dequantized copy.
using RowDotFn = float (*)(const uint8_t* row, const float* x, uint64_t n_blocks);

struct GgmlTypeTraits {
  GgmlType type = GgmlType::kF32;
  std::string_view name;                    // "f32", "q8_0", "q4_K", ... (ggml's spelling)
  uint32_t block_size = 1;                  // elements per block (1 for float types)
  uint32_t type_size = 0;                   // bytes per block
  DequantizeBlocksFn dequantize = nullptr;  // CPU reference; null for types vkstream cannot read
  QuantizeBlocksFn quantize = nullptr;      // reference quantizer; null where none is written
  RowDotFn row_dot = nullptr;               // fused row dot product, where one exists
  bool supported = false;                   // whether vkstream computes with it (has dequantize)
};

// nullopt for a type id that ggml does not define.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
inline std::optional<GgmlTypeTraits> ggml_type_traits(GgmlType t) { return ggml_type_traits(static_cast<uint32_t>(t)); }
std::string_view ggml_type_name(GgmlType t);
// Parses a type name as ggml spells it, case-insensitively ("q4_k" = "q4_K"); nullopt if unknown.
std::optional<GgmlType> ggml_type_from_name(std::string_view name);
// The types vkstream computes with, in table order, and the same as "f32, f16, ..." for messages.
std::vector<GgmlType> supported_ggml_types();
std::string supported_ggml_type_names();
// Every supported row of the table has a dequantizer and no other row has one; sizes are non-zero.
bool ggml_type_table_is_consistent();
// Bytes of a row of n elements; n must be a multiple of block_size (caller checks).
size_t ggml_row_size(GgmlType t, uint64_t n);

float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);  // round to nearest even
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);  // round to nearest even

// Dequantize n elements (a multiple of the block size) of a supported type into floats. Throws
// vks::Error(kUnsupported) naming the type and the supported ones, kInvalidArgument for partial blocks.
void dequantize_row(GgmlType t, const void* src, float* dst, uint64_t n);
// Quantize n floats (a multiple of the block size) into a type that has a quantizer (used by the
// synthetic-model tool and kernel tests). Throws vks::Error(kUnsupported) for a type without one.
void quantize_row(GgmlType t, const float* src, void* dst, uint64_t n);

}  // namespace vks
