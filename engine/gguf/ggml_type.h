#pragma once
// ggml tensor types as stored in GGUF, their block layouts, and plain C++ dequantization /
// quantization references (the oracle for the Vulkan shaders).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vks {

enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
  kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kBF16 = 30,
};

struct GgmlTypeTraits {
  std::string_view name;   // "f32", "q8_0", ... (llama.cpp spelling)
  uint32_t block_size;     // elements per block (1 for float types)
  uint32_t type_size;      // bytes per block
  bool supported;          // whether vkstream can compute with it (F32, F16, BF16, Q8_0, Q4_0)
};

// nullopt for a type id that ggml does not define.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
std::string_view ggml_type_name(GgmlType t);
// Bytes of a row of n elements; n must be a multiple of block_size (caller checks).
size_t ggml_row_size(GgmlType t, uint64_t n);

float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);  // round to nearest even
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);  // round to nearest even

// Block layouts (identical to ggml's).
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };          // 34 bytes: x = d * q
struct BlockQ4_0 { uint16_t d; uint8_t qs[16]; };         // 18 bytes: x = d * (q - 8);
                                                          // element j<16 in low nibble of qs[j],
                                                          // j>=16 in high nibble of qs[j-16]
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);

// Dequantize n elements (a multiple of the block size) of a supported type into floats.
void dequantize_row(GgmlType t, const void* src, float* dst, uint64_t n);
// Quantize n floats (a multiple of the block size) into a supported type, as ggml's reference
// quantizers do (used by the synthetic-model tool and kernel tests).
void quantize_row(GgmlType t, const float* src, void* dst, uint64_t n);

}  // namespace vks
