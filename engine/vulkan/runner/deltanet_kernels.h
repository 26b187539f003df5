#pragma once
// Recording the Gated DeltaNet kernels (shaders/deltanet_params.h): the conv with its state shift,
// and the delta rule recurrence. Both read the step's sequences as int32 [n_seqs][4]
// (VKS_DELTANET_SEQ_FIELDS: first token, tokens, state slot, starts its sequence).
#include <cstdint>

#include "engine/vulkan/core/command.h"
#include "engine/vulkan/core/kernel.h"
#include "engine/vulkan/shaders/deltanet_params.h"

namespace vks::vk {

struct DeltaNetConvBindings {
  BufferView x;          // f32 [n_tokens][x_stride]: the conv inputs (q | k | v before the conv)
  BufferView w;          // f32 [channels][kernel]
  BufferView state;      // f32 [slots][kernel - 1][channels]
  BufferView out;        // f32 [n_tokens][out_stride]
  BufferView token_seq;  // int32 [n_tokens]
  BufferView seqs;       // int32 [n_seqs][4]
};
// out = silu(conv(x)) for every token, then each sequence's state shifted: two dispatches with a
// barrier between (and none after: the caller's).
void record_deltanet_conv(CommandBuffer& cmd, KernelRegistry& kernels, const DeltaNetConvBindings& b,
                          shader::DeltaNetConvParams p, uint32_t n_tokens, uint32_t n_seqs);

struct DeltaNetRuleBindings {
  BufferView x;        // f32 conv output rows: q | k | v
  BufferView gates;    // f32 rows holding the raw beta and alpha
  BufferView dt_bias;  // f32 [n_v_heads]
  BufferView a;        // f32 [n_v_heads]
  BufferView state;    // f32 [slots][n_v_heads][head_dim][head_dim]
  BufferView seqs;     // int32 [n_seqs][4]
  BufferView out;      // f32 [n_tokens][out_stride]: head j's output at j * head_dim
};
// Tokens one delta rule dispatch runs per sequence: its invocations' loops stay within lavapipe's
// budget (VKS_LAVAPIPE_LOOP_BUDGET) for this head size.
uint32_t deltanet_tokens_per_dispatch(uint32_t head_dim);
// The recurrence over every sequence's chunk of at most longest_chunk tokens, in dispatches of
// deltanet_tokens_per_dispatch tokens with barriers between (p.token_begin / token_count are set
// here). Throws vks::Error(kInvalidArgument) for a head wider than VKS_DELTANET_MAX_HEAD_DIM.
void record_deltanet_rule(CommandBuffer& cmd, KernelRegistry& kernels, const DeltaNetRuleBindings& b,
                          shader::DeltaNetRuleParams p, uint32_t n_v_heads, uint32_t n_seqs, uint32_t longest_chunk);

}  // namespace vks::vk
