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

enum class Arch : uint8_t { kLlama, kQwen2, kQwen3, kQwen3Moe, kPhi3 };

// How rotary embedding pairs the values of a head (llama.cpp's LLAMA_ROPE_TYPE_NORM / _NEOX).
enum class RopeMode : uint8_t {
  kNorm,  // adjacent pairs (v[2i], v[2i+1]): llama
  kNeox,  // halves (v[i], v[i + rope_dim/2]): qwen2, qwen3, phi3 (GPT-NeoX style)
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
  ExpertRouting routing;  // how the router weighs them, where there are experts
};

// nullptr for an architecture vkstream does not run.
const ArchitectureInfo* find_architecture(std::string_view name);
const ArchitectureInfo& architecture_info(Arch arch);
// "llama, qwen2, qwen3, ...", for messages.
std::string supported_architecture_names();
std::string_view rope_mode_name(RopeMode mode);

}  // namespace vks
