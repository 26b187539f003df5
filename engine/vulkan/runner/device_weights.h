#pragma once
// The model's weights on the device, uploaded once at start-up. Matrices that read the same input
// are stacked by rows into one (one dispatch instead of several) when they share a type: Q|K|V
// [q_dim + 2*kv_dim, dim] (or Q|K when V differs) and gate|up [2*hidden, dim].
#include <memory>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/vulkan/core/buffer.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/kernels/device_matrix.h"
#include "engine/vulkan/runner/expert_split.h"

namespace vks::vk {

// A feed-forward block, down(act(gate x, up x)): a dense layer's, a shared one's, or a layer's
// n_experts experts stacked in one matrix per projection, expert e the e-th block of rows of each
// (as the GGUF stores ffn_*_exps), so one descriptor binds every expert and a mul_mat_id product
// (Ops::matmul_id) finds an expert by its index. A part of a stack holds whole experts.
struct DeviceFfn {
  FfnActivation activation = FfnActivation::kSilu;
  bool biased = false;          // gate/up/down biases (DeviceLayerWeights::b_gate...) apply
  // Fused: w_gate_up, per expert [gate hidden; up hidden] rows. Unfused: w_gate, w_up [hidden, dim]
  // per expert.
  bool gate_up_fused = false;
  DeviceMatrix w_gate_up;
  DeviceMatrix w_gate, w_up;
  DeviceMatrix w_down;          // [dim, hidden] per expert
  uint32_t hidden = 0;
  uint32_t n_experts = 1;
};

struct DeviceLayerWeights {
  Buffer attn_norm;             // f32 [dim]
  // The mixer's input products in as few matrices as their types allow, each writing its rows of
  // the step's q|k|v activation from first_row on. Attention: Q, K, V [q_dim + 2*kv_dim rows in
  // all, dim], rows q then k then v: q|k|v, or q|k and v (V has its own type in a Q4_K_M file's
  // more-bits layers), or three; a gated output (AttentionSpec::output_gate) adds the gates [q_dim]
  // after V. A Gated DeltaNet layer: qkv [conv_channels], z [v_dim], beta, alpha [n_v_heads].
  struct RowBlock {
    DeviceMatrix matrix;
    uint32_t first_row = 0;
  };
  std::vector<RowBlock> qkv;
  DeviceMatrix wo;              // [dim, q_dim] (a Gated DeltaNet layer: ssm_out [dim, v_dim])
  // A Gated DeltaNet layer's vectors (f32): conv taps [conv_channels][conv_kernel], dt bias and
  // A [n_v_heads], the output norm [head_dim].
  Buffer conv, dt_bias, ssm_a, ssm_norm;
  Buffer ffn_norm;              // f32 [dim]
  // The feed-forward block: one expert for a dense block (no router), else the router picks
  // LayerSpec::ffn.n_used of ffn.n_experts per token.
  DeviceFfn ffn;
  // The experts (ffn's matrices and b_gate/b_up/b_down) stay in host memory and run on the CPU
  // (ExpertSplit): ffn has their shape only, no matrices.
  bool experts_on_host = false;
  DeviceMatrix router;          // [n_experts, dim] ffn_gate_inp; no rows for a dense block
  // A shared block beside the experts (FfnSpec::has_shared; hidden 0 where there is none), and
  // where its norms are split (Gemma 4): its post-norm, the experts' pre- and post-norms.
  DeviceFfn shared;
  Buffer post_norm_shared, pre_norm_experts, post_norm_experts;  // f32 [dim]
  DeviceMatrix shared_gate_inp;  // [1, dim]: the shared block's output times sigmoid(this · x) (FfnSpec::shared_gated)
  Buffer router_in_weight;      // f32 [dim]: ffn_gate_inp.scale / sqrt(dim) (RouterInput::kScaledNorm)
  Buffer expert_scale;          // f32 [n_experts] (Gemma 4), folded into the routing weights; absent: none
  // The layer's per-layer input (LlamaConfig::per_layer_input_dim P; rows 0 where there is none):
  // x += post_norm(proj(gelu(gate x) * its slice)).
  DeviceMatrix per_layer_gate;  // [P, dim]
  DeviceMatrix per_layer_proj;  // [dim, P]
  Buffer per_layer_post_norm;   // f32 [dim]
  // Optional tensors of some architectures (invalid Buffer = absent; the forward branches on them).
  Buffer bqkv;                  // f32 [q_dim + 2*kv_dim]: bq | bk | bv (qwen2; absent parts zero)
  Buffer q_norm, k_norm;        // f32 [head_dim]: per-head RMSNorm of Q and K (qwen3)
  Buffer bo;                    // f32 [dim]: attn_output bias (gpt-oss)
  Buffer sinks;                 // f32 [n_heads]: attention sink logits (gpt-oss)
  Buffer post_attn_norm, post_ffn_norm;  // f32 [dim]: Gemma's post-norms (LayerSpec::post_norms)
  Buffer router_bias;           // f32 [n_experts] (gpt-oss)
  // Per-expert biases (gpt-oss): expert e's row at e * row_bytes (Ops::bias_add_rows' bias_stride).
  struct BiasRows {
    Buffer buffer;
    uint64_t row_bytes = 0;
    bool valid() const { return buffer.valid(); }
  };
  BiasRows b_gate, b_up, b_down;
  Buffer value_norm;            // f32 [head_dim] of ones: Gemma 4's unweighted per-head V norm
  float output_scale = 1.0f;    // Gemma 4's layer_output_scale
  // This layer's rope (its base; YaRN's blend): its table in DeviceWeights::rope_tables (each pair's
  // angle per position, ref::rope_frequencies), and YaRN's attention factor less 1 (0 without YaRN).
  uint32_t rope_table = 0;
  float rope_angle_scale = 1.0f;   // RopeKvParams::freq_scale (ref::rope_angle_scale)
  float rope_mscale_extra = 0.0f;
};

struct DeviceWeights {
  DeviceMatrix token_embd;      // [vocab, dim]
  std::vector<DeviceLayerWeights> layers;
  Buffer output_norm;           // f32 [dim]
  DeviceMatrix output_own;      // [vocab, dim]; empty when tied
  bool tied = false;
  // The distinct rope tables of the layers (local and global layers differ): a few, not one a layer.
  std::vector<Buffer> rope_tables;
  const DeviceMatrix& output() const { return tied ? token_embd : output_own; }
  // Per-layer inputs (LlamaConfig::per_layer_input_dim P, L layers; rows 0 where there are none).
  DeviceMatrix per_layer_token_embd;  // [vocab, L*P]
  DeviceMatrix per_layer_model_proj;  // [L*P, dim]
  Buffer per_layer_proj_norm;         // f32 [P]
  uint64_t bytes = 0;           // device bytes of all weights
  ExpertSplit split;            // which layers' experts stayed in host memory
};

// The weights' device bytes and buffers, by what may stay on the host (expert_split.h).
WeightFootprint weight_footprint(const Device& device, const LlamaModel& model);
// Which layers' experts stay on the host (split_experts with budget, 0: the device's device-local
// memory), checked against the device's allocation count too.
ExpertSplit plan_weights(const Device& device, const LlamaModel& model, int32_t cpu_expert_layers, uint64_t budget);

// Uploads every weight tensor (through staging where the device needs it) but the experts
// plan_weights leaves on the host (RunnerOptions::cpu_expert_layers, device_weight_budget). Throws
// vks::Error (kOutOfMemory when the device cannot hold them, kUnsupported for a weight type it
// cannot run).
std::unique_ptr<DeviceWeights> upload_weights(const Device& device, const LlamaModel& model,
                                              int32_t cpu_expert_layers = -1, uint64_t budget = 0);

}  // namespace vks::vk
