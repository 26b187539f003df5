#pragma once
// The model architectures vkstream runs, as one table: what differs between them is a GGUF key
// prefix, the rotary-embedding mode and which optional tensors a layer has. The forward passes
// branch on the tensors (`if (layer.bq)`), never on the architecture name.
#include <cstdint>
#include <string>
#include <string_view>

namespace vks {

enum class Arch : uint8_t { kLlama, kQwen2, kQwen3 };

// How rotary embedding pairs the values of a head (llama.cpp's LLAMA_ROPE_TYPE_NORM / _NEOX).
enum class RopeMode : uint8_t {
  kNorm,  // adjacent pairs (v[2i], v[2i+1]): llama
  kNeox,  // halves (v[i], v[i + rope_dim/2]): qwen2, qwen3 (GPT-NeoX style)
};

// Whether a layer may or must carry an optional tensor.
enum class TensorRule : uint8_t { kAbsent, kOptional, kRequired };

struct ArchitectureInfo {
  Arch arch;
  std::string_view name;  // general.architecture and the prefix of its hyperparameter keys
  RopeMode rope_mode;
  TensorRule qkv_bias;    // blk.N.attn_{q,k,v}.bias
  TensorRule qk_norm;     // blk.N.attn_{q,k}_norm.weight: per-head RMSNorm of Q and K before rope
  TensorRule rope_freqs;  // rope_freqs.weight: per-frequency divisors (Llama 3.1 rope scaling)
};

// nullptr for an architecture vkstream does not run.
const ArchitectureInfo* find_architecture(std::string_view name);
const ArchitectureInfo& architecture_info(Arch arch);
// "llama, qwen2, qwen3", for messages.
std::string supported_architecture_names();
std::string_view rope_mode_name(RopeMode mode);

}  // namespace vks
