#pragma once
// The element type of a runner's KV cache, chosen per pool (K and V apart, as llama.cpp's -ctk/-ctv):
// F16 (the default: the unquantized cache, F32 on the CPU backend), Q8_0 (int8 values with one
// scale per 32: 0.56x F16's bytes, 0.28x F32's) or Q4_0 (4-bit values with one scale per 32: 0.31x
// F16's bytes, 0.16x F32's). The CPU backend takes one type for K and V.
// Layouts: engine/vulkan/shaders/attn_params.h, engine/cpu/kv_quant.h.
#include <cstdint>
#include <string_view>

#include "engine/model/llama_config.h"

namespace vks {

enum class KvType : uint8_t { kF16, kQ8_0, kQ4_0 };

// "f16", "q8_0" or "q4_0"; throws vks::Error(kInvalidArgument) naming the accepted types otherwise.
KvType parse_kv_type(std::string_view name);
std::string_view kv_type_name(KvType type);
// Bytes the values themselves of n values take in a pool of this type: F16's halves, Q8_0's int8,
// Q4_0's nibbles (a quantized pool's scales follow them; quantized: n a multiple of 32). The one
// place a type's value width is written: rows, scale-plane offsets and the CPU pools use it.
constexpr uint64_t kv_plane_bytes(KvType type, uint64_t n) {
  return type == KvType::kF16 ? 2 * n : type == KvType::kQ8_0 ? n : n / 2;
}
// Bytes one token's row of kv_dim values takes in a pool of this type: its values' plane and, for
// a quantized type, an f32 scale per 32 (kv_dim a multiple of 32).
uint64_t kv_row_bytes(KvType type, uint64_t kv_dim);
// Values per quantization block (1 for F16): head sizes must be a multiple of it.
uint32_t kv_block_values(KvType type);
// Throws vks::Error(kUnsupported) naming the size where a layer's head size is not a multiple of the
// type's block (a block may not straddle two heads), for every backend.
void require_kv_type_fits(const LlamaConfig& config, KvType type);

}  // namespace vks
