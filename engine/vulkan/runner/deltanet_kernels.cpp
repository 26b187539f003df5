#include "engine/vulkan/runner/deltanet_kernels.h"

#include <fmt/format.h>

#include "engine/common/error.h"
#include "engine/vulkan/shaders/shader_params.h"

namespace vks::vk {

void record_deltanet_conv(CommandBuffer& cmd, KernelRegistry& kernels, const DeltaNetConvBindings& b,
                          shader::DeltaNetConvParams p, uint32_t n_tokens, uint32_t n_seqs) {
  if (n_tokens == 0 || p.channels == 0) return;
  const Kernel& k = kernels.get("deltanet_conv_f32");
  const uint32_t groups = static_cast<uint32_t>(ceil_div(p.channels, k.layout().local_size[0]));
  p.shift = 0;
  cmd.dispatch(k, {b.x, b.w, b.state, b.out, b.token_seq, b.seqs}, p, Groups{groups, n_tokens, 1});
  cmd.barrier(Stage::kCompute, Stage::kCompute);
  p.shift = 1;
  cmd.dispatch(k, {b.x, b.w, b.state, b.out, b.token_seq, b.seqs}, p, Groups{groups, n_seqs, 1});
}

uint32_t deltanet_tokens_per_dispatch(uint32_t head_dim) {
  // Per invocation: loading and storing its column (head_dim + 1 iterations each, exit tests
  // counted), then per token one iteration of the token loop and two of head_dim + 1.
  const uint64_t fixed = 2 * (uint64_t{head_dim} + 1) + 16;
  const uint64_t per_token = 2 * (uint64_t{head_dim} + 1) + 1;
  return static_cast<uint32_t>((VKS_LAVAPIPE_LOOP_BUDGET - fixed) / per_token);
}

void record_deltanet_rule(CommandBuffer& cmd, KernelRegistry& kernels, const DeltaNetRuleBindings& b,
                          shader::DeltaNetRuleParams p, uint32_t n_v_heads, uint32_t n_seqs, uint32_t longest_chunk) {
  if (n_seqs == 0 || longest_chunk == 0) return;
  if (p.head_dim == 0 || p.head_dim > VKS_DELTANET_MAX_HEAD_DIM) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("deltanet_rule: head size {} outside 1..{}", p.head_dim, VKS_DELTANET_MAX_HEAD_DIM));
  }
  const Kernel& k = kernels.get("deltanet_rule_f32");
  const Groups groups{n_seqs, n_v_heads, static_cast<uint32_t>(ceil_div(p.head_dim, VKS_DELTANET_RULE_WG))};
  p.token_count = deltanet_tokens_per_dispatch(p.head_dim);
  for (p.token_begin = 0; p.token_begin < longest_chunk; p.token_begin += p.token_count) {
    if (p.token_begin > 0) cmd.barrier(Stage::kCompute, Stage::kCompute);
    cmd.dispatch(k, {b.x, b.gates, b.dt_bias, b.a, b.state, b.seqs, b.out}, p, groups);
  }
}

}  // namespace vks::vk
