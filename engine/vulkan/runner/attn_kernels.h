#pragma once
// Recording the attention-side kernels (rope_kv_f16; attention: attn_f16 on CPU devices,
// attn_lanes_f16 on GPUs, following the runner's MatmulFamily) into a command buffer.
// Parameters and the KV pool layout: engine/vulkan/shaders/attn_params.h.
#include "engine/model/kv_type.h"
#include "engine/vulkan/core/command.h"
#include "engine/vulkan/core/kernel.h"
#include "engine/vulkan/kernels/ops.h"
#include "engine/vulkan/shaders/attn_params.h"

namespace vks::vk {

// A KV pool type as the kernels name it (VKS_KV_*).
inline uint32_t kv_type_id(KvType type) {
  switch (type) {
    case KvType::kQ8_0: return VKS_KV_Q8_0;
    case KvType::kQ4_0: return VKS_KV_Q4_0;
    case KvType::kF16: break;
  }
  return VKS_KV_F16;
}

struct RopeKvBindings {
  BufferView rows;          // f32 [n_tokens][row_stride]: Q rotated in place, K and V read
  BufferView positions;     // int32 [n_tokens]
  BufferView freqs;         // f32 [rope_dim / 2], ref::rope_frequencies of the model
  BufferView k_pool;        // one layer's F16 pools
  BufferView v_pool;
  BufferView slot_mapping;  // int32 [n_tokens]
};
// Rope on Q, rope on K into the K pool, V into the V pool: one dispatch (see RopeKvParams).
void record_rope_kv(CommandBuffer& cmd, KernelRegistry& kernels, const RopeKvBindings& b, const gpu::RopeKvParams& p);

struct AttnBindings {
  BufferView q;             // f32 [n_tokens][q_stride]
  BufferView k_pool;        // one layer's F16 pools
  BufferView v_pool;
  BufferView positions;     // int32 [n_tokens]
  BufferView token_seq;     // int32 [n_tokens]
  BufferView block_tables;  // int32 [n_seqs][max_blocks_per_seq]
  BufferView out;           // f32 [n_tokens][out_stride]
  // kLanes: room for the split states of attention_parallel_splits (attention_partials_bytes), a
  // view with its size; a null, smaller or unsized view leaves every workgroup walking its splits.
  BufferView partials;
  BufferView sinks;         // f32 [n_heads] where p.has_sinks (else unread: any view)
  // kLanes, with partials: the (head, token) counts of stored splits (attention_split_counts_bytes),
  // zero before the first dispatch; each dispatch leaves them zero. Null or smaller: no parallel splits.
  BufferView split_counts;
};
// kRows: attn_f16, one invocation per (token, head) walking its keys alone; kLanes: attn_lanes_f16,
// a workgroup per (head, token) splitting each tile of keys, and for decode batches per split of
// p.split_keys keys (the runner's attention_split_keys_for; kLanes throws for another value), the
// last of them merging the stored states (one dispatch). Each is bit-identical
// alone/batched/chunked, split in parallel or not; the two families differ from each other in the
// last bits (their sums run in other orders). longest_keys: the step's StepInputs::longest_keys, no
// less than any token's position + 1 (the splits past it would be neither computed nor merged
// right). p.split_count is set here.
void record_attention(CommandBuffer& cmd, KernelRegistry& kernels, const AttnBindings& b, gpu::AttnParams p,
                      MatmulFamily family, uint64_t longest_keys);

// Splits of split_keys keys that `keys` keys from a row's first visible key span (attn_split.glsl's
// split_count_of): what the lanes attention's grid is sized by.
inline uint64_t attention_split_count(uint64_t keys, uint32_t split_keys) { return ceil_div(keys, split_keys); }

// The lanes attention's keys per split on this device: "" its own (VKS_ATTN_SPLIT_KEYS on every
// device until a GPU run measures others: bench/real_gpu/run.sh splits sweeps them), or a number of
// keys, a multiple of VKS_ATTN_LANES_WG up to VKS_ATTN_SPLIT_KEYS_MAX (VKSTREAM_ATTN_SPLIT_KEYS).
// Larger splits merge fewer states at long context; smaller ones give a short context more
// workgroups. A token's bits depend on it (its splits' sums), never on its batch. Throws
// vks::Error(kInvalidArgument) for anything else.
uint32_t attention_split_keys_for(const DeviceInfo& device, std::string_view choice);

// Steps of at most this many tokens run attn_lanes_f16's splits in parallel: decode batches, where
// a workgroup per (head, token) leaves most of a GPU idle while each walks a long context.
inline constexpr uint32_t kAttnParallelMaxTokens = 16;
// The split workgroups record_attention dispatches per (head, token): 0 (each walks its splits)
// unless the family is kLanes, the step has at most kAttnParallelMaxTokens tokens, its longest
// row has more than one split of p.split_keys and their states fit partials_bytes.
uint32_t attention_parallel_splits(const gpu::AttnParams& p, MatmulFamily family, uint64_t longest_keys,
                                   uint64_t partials_bytes);
// Bytes of split states a step of kAttnParallelMaxTokens tokens attending to max_keys keys needs.
uint64_t attention_partials_bytes(uint32_t n_heads, uint32_t head_dim, uint64_t max_keys, uint32_t split_keys);
// Bytes of the split counts of a step of kAttnParallelMaxTokens tokens (AttnBindings::split_counts).
uint64_t attention_split_counts_bytes(uint32_t n_heads);

// The attention kernels' specialization for a head size: {head_dim / 2, pairs per runtime-loop iteration}.
struct AttnSpecialization {
  uint32_t half_head_dim;
  // The largest power of two up to 4 that divides half_head_dim: a larger step unrolls a bigger
  // body, which lavapipe compiles for seconds longer (cold start) for contexts past 110k tokens.
  uint32_t dim_step;
};
AttnSpecialization attention_specialization(uint32_t head_dim);
// The family's attention pipeline specialized for head_dim (built on first use; the runner builds it
// at start).
// k_type, v_type: the pools' VKS_KV_* (AttnParams::k_type, v_type).
const Kernel& attention_kernel(KernelRegistry& kernels, uint32_t head_dim, MatmulFamily family,
                               uint32_t k_type = VKS_KV_F16, uint32_t v_type = VKS_KV_F16);

// The most keys one attention row can attend to on a device that ends an invocation's loops after
// VKS_LAVAPIPE_LOOP_BUDGET iterations (lavapipe), counting each loop's exit test. attn_f16: two
// loops of half_head_dim / dim_step + 1 and the chunk loop per VKS_ATTN_CHUNK keys, plus the set-up
// and output loops: 110,336 keys at head_dim 64, 59,872 at 128, 31,264 at 256. attn_lanes_f16 (only
// on a CPU device when forced): every loop counted, the unrolled ones too, per split of
// split_keys keys walked by one workgroup, and a margin: 107,520 keys at head_dim 64, 89,216 at
// 128, 66,560 at 256 (splits of VKS_ATTN_SPLIT_KEYS).
uint64_t attention_max_keys(uint32_t head_dim, MatmulFamily family, uint32_t split_keys);

// Throws vks::Error(kUnsupported) when the model's head shape is one these kernels cannot run
// (odd head_dim, head_dim above VKS_ATTN_MAX_HEAD_DIM, n_heads not a multiple of n_kv_heads, odd rope_dim).
void check_attention_shape(uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, uint32_t rope_dim);

}  // namespace vks::vk
