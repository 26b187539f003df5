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

namespace vks::vk {

// One feed-forward block (a dense layer's, or one expert's): down(silu(gate x) * up x).
struct DeviceFfn {
  // Fused: w_gate_up [2*hidden, dim] (rows: gate, then up). Unfused: w_gate, w_up [hidden, dim].
  bool gate_up_fused = false;
  DeviceMatrix w_gate_up;
  DeviceMatrix w_gate, w_up;
  DeviceMatrix w_down;          // [dim, hidden]
  uint32_t hidden = 0;
};

struct DeviceLayerWeights {
  Buffer attn_norm;             // f32 [dim]
  // Q, K, V [q_dim + 2*kv_dim rows in all, dim], rows q then k then v, in as few matrices as their
  // types allow: q|k|v, or q|k and v (V has its own type in a Q4_K_M file's more-bits layers), or
  // three. Each writes its rows of the step's q|k|v activation from first_row on.
  struct RowBlock {
    DeviceMatrix matrix;
    uint32_t first_row = 0;
  };
  std::vector<RowBlock> qkv;
  DeviceMatrix wo;              // [dim, q_dim]
  Buffer ffn_norm;              // f32 [dim]
  // The feed-forward block as experts: one for a dense block (no router), else router picks
  // LayerSpec::ffn.n_used of them per token.
  std::vector<DeviceFfn> experts;
  DeviceMatrix router;          // [n_experts, dim] ffn_gate_inp; no rows for a dense block
  // Optional tensors of some architectures (invalid Buffer = absent; the forward branches on them).
  Buffer bqkv;                  // f32 [q_dim + 2*kv_dim]: bq | bk | bv (qwen2; absent parts zero)
  Buffer q_norm, k_norm;        // f32 [head_dim]: per-head RMSNorm of Q and K (qwen3)
};

struct DeviceWeights {
  DeviceMatrix token_embd;      // [vocab, dim]
  std::vector<DeviceLayerWeights> layers;
  Buffer output_norm;           // f32 [dim]
  DeviceMatrix output_own;      // [vocab, dim]; empty when tied
  bool tied = false;
  Buffer rope_freqs;            // f32 [rope_dim/2] each pair's angle per position (ref::rope_frequencies)
  const DeviceMatrix& output() const { return tied ? token_embd : output_own; }
  uint64_t bytes = 0;           // device bytes of all weights
};

// Uploads every weight tensor (through staging where the device needs it). Throws vks::Error
// (kOutOfMemory when the device cannot hold them, kUnsupported for a weight type it cannot run).
std::unique_ptr<DeviceWeights> upload_weights(const Device& device, const LlamaModel& model);

}  // namespace vks::vk
