#pragma once
// The model architectures vkstream runs, as one table of behaviour: the GGUF key prefix, the
// rotary-embedding mode, which optional tensors a layer has, how its tensors are laid out (fused
// or separate) and how its experts are routed. The loader turns a row into the per-layer
// description (layer_spec.h); the forward passes read that and the tensors a layer has, never the
// architecture name.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/model/layer_spec.h"

namespace vks {

enum class Arch : uint8_t { kLlama, kQwen2, kQwen3, kQwen3Moe, kPhi3, kGemma2, kGemma3, kGptOss, kGemma4, kQwen35,
                           kQwen35Moe };

// How rotary embedding pairs the values of a head (llama.cpp's LLAMA_ROPE_TYPE_NORM / _NEOX).
enum class RopeMode : uint8_t {
  kNorm,  // adjacent pairs (v[2i], v[2i+1]): llama
  kNeox,  // halves (v[i], v[i + rope_dim/2]): qwen2, qwen3, phi3, gemma, gpt-oss (GPT-NeoX style)
};

// Whether a layer may or must carry an optional tensor (or feature).
enum class TensorRule : uint8_t { kAbsent, kOptional, kRequired };

// Where a layer's projections are stored.
enum class ProjectionLayout : uint8_t {
  kSeparate,  // attn_q/attn_k/attn_v; ffn_gate and ffn_up
  kFused,     // attn_qkv (rows Q, K, V); ffn_up holds gate rows then up rows, no ffn_gate (phi3)
};

struct ArchitectureInfo {
  Arch arch;
  std::string_view name;  // general.architecture and the prefix of its hyperparameter keys
  RopeMode rope_mode;
  TensorRule qkv_bias;    // blk.N.attn_{q,k,v}.bias
  TensorRule qk_norm;     // blk.N.attn_{q,k}_norm.weight: per-head RMSNorm of Q and K before rope
  TensorRule rope_freqs;  // rope_freqs.weight: per-frequency divisors (Llama 3.1 rope scaling)
  ProjectionLayout projections;
  TensorRule experts;     // routed experts (expert_count > 1) instead of a dense feed-forward block
  ExpertRouting routing = {};  // how the router weighs them, where there are experts
  FfnActivation activation = FfnActivation::kSilu;
  // Sliding windows: llama.cpp's default pattern period where <arch>.attention.sliding_window is set
  // and no sliding_window_pattern key says otherwise (slides_in_period); 0: the architecture has no
  // windows (the key is refused).
  uint32_t window_period = 0;
  float local_rope_base = 0.0f;     // local layers' rope base without rope.freq_base_swa (0: the global one)
  float attn_softcap = 0.0f;        // default of <arch>.attn_logit_softcapping (0: not applied)
  float final_softcap = 0.0f;       // default of <arch>.final_logit_softcapping (0: not applied)
  bool softcap_keys = false;        // whether those two keys are read
  bool scale_embeddings = false;    // input embeddings times sqrt(dim) (Gemma)
  bool post_norms = false;          // post_attention_norm and post_ffw_norm after each sublayer
  std::string_view ffn_norm = "ffn_norm";  // the pre-FFN norm's tensor (gpt-oss: post_attention_norm)
  TensorRule output_bias = TensorRule::kAbsent;   // blk.N.attn_output.bias
  TensorRule sinks = TensorRule::kAbsent;         // blk.N.attn_sinks.weight
  TensorRule expert_biases = TensorRule::kAbsent; // router and expert gate/up/down biases (gpt-oss)
  // llama.cpp scales Q by 1/sqrt(dim / n_heads) instead of 1/sqrt(head_dim) for Gemma's 27B shapes,
  // which it recognises by their layer count (0: never).
  uint32_t dim_per_head_scale_layers = 0;
  bool unit_attention_scale = false;  // scores are q·k unscaled (Gemma 4: its Q norm carries the scale)
  TensorRule attn_v = TensorRule::kRequired;  // kOptional: a layer without attn_v takes V from K (Gemma 4)
  bool value_norm = false;            // V RMS-normed per head without a weight (Gemma 4)
  bool layer_output_scale = false;    // blk.N.layer_output_scale.weight multiplies the residual (Gemma 4)
  bool rope_factors_global_only = false;  // rope_freqs.weight applies to the global layers only (Gemma 4)
  // Hybrid: some layers are Gated DeltaNet (ssm.* keys; which ones by attention.recurrent_layers or
  // full_attention_interval), the others attention with a sigmoid output gate on Q (Qwen3.5).
  bool deltanet_layers = false;
  // A shared expert beside the routed ones, gated by sigmoid(ffn_gate_inp_shexp · x) (Qwen3.5 MoE).
  bool gated_shared_expert = false;
  // Where the file has experts, a dense MLP beside them (the shared block, ffn_gate/up/down), each
  // normed apart, the router reading the residual's scaled norm, per-expert output scales (Gemma 4).
  bool dense_beside_experts = false;
};

// Whether layer l slides a window under a sliding_window_pattern period (llama.cpp's swa pattern):
// every layer but the last of each period; period 0 or 1: every layer.
inline bool slides_in_period(uint32_t l, uint32_t period) { return period <= 1 || l % period < period - 1; }

// nullptr for an architecture vkstream does not run.
const ArchitectureInfo* find_architecture(std::string_view name);
const ArchitectureInfo& architecture_info(Arch arch);
// "llama, qwen2, qwen3, ...", for messages.
std::string supported_architecture_names();
std::string_view rope_mode_name(RopeMode mode);

}  // namespace vks
