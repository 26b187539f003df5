// The Gated DeltaNet mixer of a layer (the CPU's deltanet_mixer, engine/cpu/cpu_deltanet.cpp), in
// the step's one command buffer: qkv|z|beta|alpha = rmsnorm(x) W; the causal conv with each
// sequence's conv state (deltanet_conv_f32); per-head L2 norm of q and k; the delta rule per value
// head over each sequence's chunk in order (deltanet_rule_f32), its output into the q|k|v columns
// the conv consumed; RMSNorm of each head's output times silu(z); x += ssm_out of that.
#include <cmath>

#include "engine/vulkan/runner/deltanet_kernels.h"
#include "engine/vulkan/runner/vulkan_runner.h"

namespace vks {

void VulkanRunner::record_deltanet_mixer(vk::CommandBuffer& cmd, uint32_t l, const StepInputs& in) {
  constexpr uint64_t kF = sizeof(float);
  const uint32_t n = static_cast<uint32_t>(in.n_tokens);
  const uint32_t n_seqs = static_cast<uint32_t>(in.n_seqs);
  const LlamaConfig& c = config_;
  const DeltaNetSpec& d = c.layers[l].deltanet;
  const vk::DeviceLayerWeights& L = weights_->layers[l];
  const uint32_t channels = d.conv_channels(), v_dim = d.v_dim(), hd = d.head_dim, heads = d.n_v_heads;
  const uint32_t z_at = channels, beta_at = channels + v_dim, alpha_at = beta_at + heads;

  record_input_products(cmd, L, n);
  vk::record_deltanet_conv(cmd, *kernels_,
                           vk::DeltaNetConvBindings{qkv_.view(), L.conv.view(), states_.conv(l), dn_conv_.view(),
                                                    token_seq_.device.view(), seq_states_.device.view()},
                           vk::shader::DeltaNetConvParams{channels, d.conv_kernel, qkv_s_, dn_conv_s_,
                                                          states_.conv_slot_floats(l), 0},
                           n, n_seqs);
  mark(cmd, "deltanet.conv");
  barrier(cmd);
  ops_->l2norm_heads(cmd, dn_conv_.view(), dn_conv_s_, n, 2 * d.n_groups, hd, c.norm_eps);  // q heads, k heads
  mark(cmd, "deltanet.l2norm");
  barrier(cmd);
  vk::shader::DeltaNetRuleParams rule{};
  rule.head_dim = hd;
  rule.n_groups = d.n_groups;
  rule.x_stride = dn_conv_s_;
  rule.k_at = d.qk_dim();
  rule.v_at = 2 * d.qk_dim();
  rule.gate_stride = qkv_s_;
  rule.beta_at = beta_at;
  rule.alpha_at = alpha_at;
  rule.out_stride = qkv_s_;
  rule.slot_floats = states_.delta_slot_floats(l);
  rule.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  vk::record_deltanet_rule(cmd, *kernels_,
                           vk::DeltaNetRuleBindings{dn_conv_.view(), qkv_.view(), L.dt_bias.view(), L.ssm_a.view(),
                                                    states_.delta(l), seq_states_.device.view(), qkv_.view()},
                           rule, heads, n_seqs, longest_chunk_);
  mark(cmd, "deltanet.rule");
  barrier(cmd);
  // Gated RMSNorm: norm(o) * silu(z), into att_ for ssm_out.
  ops_->rmsnorm_heads(cmd, qkv_.view(), qkv_s_, L.ssm_norm.view(), n, heads, hd, c.norm_eps);
  mark(cmd, "deltanet.norm");
  barrier(cmd);
  ops_->swiglu(cmd, qkv_.view(uint64_t{z_at} * kF, VK_WHOLE_SIZE), qkv_.view(), qkv_s_, att_.view(), q_s_, n, v_dim);
  mark(cmd, "deltanet.gate");
  barrier(cmd);
  record_mixer_output(cmd, L, n, "matmul.ssm_out");
}

}  // namespace vks
