#pragma once
// The CPU backend's Q8_0 KV pool (--kv-type q8_0): each block of 32 values of a slot's row as int8
// with one f32 scale, the numbers the Vulkan pools hold (engine/vulkan/shaders/attn_params.h), and
// paged attention over them: ref::attention over the decoded values, the same bits.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/cpu/reference_ops.h"

namespace vks::cpu {

inline constexpr size_t kKvQ8Block = 32;

// q[0..n) and scales[0..n/32) from x[0..n): scale = max|x| / 127, q = x / scale rounded half away
// from zero (0 for an all-zero block). n is a multiple of kKvQ8Block.
void quantize_kv_q8(const float* x, size_t n, int8_t* q, float* scales);

// ref::attention_paged over Q8_0 pools, giving the bits of ref::attention_paged over the decoded
// values (value * block scale): a slot's row is `stride` int8 values (stride / 32 scales),
// rows of positions [first, first + n_ctx) through block_table. head_dim must be a multiple of 32.
// level: as ref::attention_paged's.
void attention_paged_q8(float* out, const float* q, const int8_t* key_q, const float* key_scales,
                        const int8_t* value_q, const float* value_scales, std::span<const int32_t> block_table,
                        size_t block_size, size_t first, size_t n_ctx, size_t stride, const ref::AttentionParams& p,
                        ref::AttendLevel level = ref::fastest_attend_level());

}  // namespace vks::cpu
