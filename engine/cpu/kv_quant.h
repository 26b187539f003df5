#pragma once
// The CPU backend's quantized KV pools (--kv-type q8_0 | q4_0): each block of 32 values of a slot's
// row as quants with one f32 scale, the numbers the Vulkan pools hold
// (engine/vulkan/shaders/attn_params.h), and paged attention over them: ref::attention over the
// decoded values, the same bits.
//  - Q8_0: an int8 per value (a byte); a value is scale * int8.
//  - Q4_0: a nibble per value, value 2i in the low nibble of byte i; a value is scale * (nibble - 8).
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/cpu/reference_ops.h"
#include "engine/model/kv_type.h"

namespace vks::cpu {

inline constexpr size_t kKvBlock = 32;

// The quants (kv_plane_bytes(type, n) bytes, kv_type.h) and scales[0..n/32) of x[0..n), with
// llama.cpp's numbers: Q8_0 scale = max|x| / 127, x / scale rounded half away from zero; Q4_0
// scale = the value of largest magnitude (first of equals) / -8, nibble = min(15, trunc(x / scale +
// 8.5)). An all-zero block is zeros. n is a multiple of kKvBlock; type is kQ8_0 or kQ4_0.
void quantize_kv(KvType type, const float* x, size_t n, uint8_t* q, float* scales);

// Pools of one quantized type, as quantize_kv writes them: the values are placed as an F32 pool's
// (paged_kv_layout.h); value i's quants start at byte kv_plane_bytes(type, i), its block's scale is
// scales[i / 32].
struct QuantKvPools {
  KvType type;
  const uint8_t* key_q;
  const float* key_scales;
  const uint8_t* value_q;
  const float* value_scales;
};

// ref::attention_paged over quantized pools, giving the bits of ref::attention_paged over the decoded
// values: rows of positions [first, first + n_ctx) through block_table. head_dim must be a multiple
// of 32. level: as ref::attention_paged's.
void attention_paged_quant(float* out, const float* q, const QuantKvPools& pools, std::span<const int32_t> block_table,
                           size_t block_size, size_t first, size_t n_ctx, size_t stride, const ref::AttentionParams& p,
                           ref::AttendLevel level = ref::fastest_attend_level());

}  // namespace vks::cpu
