#pragma once
// Hyperparameters of a llama-family model (the architectures of architecture.h) from a GGUF's
// `<arch>.*` keys, with llama.cpp's defaults for absent ones (rope.freq_base 10000,
// layer_norm_rms_epsilon 1e-5, head_count_kv = head_count, ...), and what each layer does
// (layer_spec.h).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/architecture.h"
#include "engine/model/layer_spec.h"

namespace vks {

struct LlamaConfig {
  std::string architecture;     // general.architecture ("llama", "qwen2", "qwen3")
  Arch arch = Arch::kLlama;     // the same, as the architecture table's enum
  RopeMode rope_mode = RopeMode::kNorm;  // from the architecture
  std::string name;             // general.name, may be empty
  std::string quantization;     // "Q4_K_M", "F32", ... (gguf::model_quantization), may be empty
  uint32_t dim = 0;             // llama.embedding_length
  uint32_t n_layers = 0;        // llama.block_count
  uint32_t n_heads = 0;         // llama.attention.head_count
  uint32_t n_kv_heads = 0;      // llama.attention.head_count_kv (default n_heads)
  uint32_t head_dim = 0;        // dim / n_heads (or llama.attention.key_length)
  uint32_t hidden_dim = 0;      // llama.feed_forward_length (a dense layer's FFN rows)
  uint32_t vocab_size = 0;      // rows of token_embd
  uint32_t context_length = 0;  // llama.context_length
  uint32_t rope_dim = 0;        // llama.rope.dimension_count (default head_dim)
  float rope_freq_base = 10000.0f;   // llama.rope.freq_base (global layers; see LayerSpec::attention)
  float rope_freq_scale = 1.0f;      // 1 / rope.scaling.factor for linear scaling
  std::string rope_scaling = "none"; // rope.scaling.type: none, linear or yarn (Llama 3.1 scaling is
                                     // the rope_freqs.weight tensor, see LlamaWeights::rope_freqs)
  // YaRN (rope_scaling "yarn"): the context factor, the training context and the ramp's bounds in
  // rotations (llama.cpp's yarn_beta_fast / yarn_beta_slow).
  struct Yarn {
    float factor = 1.0f;
    uint32_t original_context = 0;
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
  } yarn;
  float embedding_scale = 1.0f;      // input embeddings are multiplied by this (Gemma: sqrt(dim))
  float final_softcap = 0.0f;        // 0: none; c: logits = c * tanh(logits / c)
  float norm_eps = 1e-5f;            // llama.attention.layer_norm_rms_epsilon
  bool tied_embeddings = false;      // no output.weight: logits use token_embd
  int32_t pooling_type = -1;         // <arch>.pooling_type, llama.cpp's enum (-1 absent; see pooling.h)
  // Experts (<arch>.expert_count > 1; 0 for a dense model): how many, how many each token runs,
  // each one's FFN rows (expert_feed_forward_length, else feed_forward_length).
  uint32_t n_experts = 0;
  uint32_t n_experts_used = 0;
  uint32_t expert_hidden_dim = 0;
  // Gemma 4's per-layer inputs (<arch>.embedding_length_per_layer_input; 0: none): each layer gets a
  // slice of this width from the token and the input embedding, gating an addition at its end.
  uint32_t per_layer_input_dim = 0;
  std::vector<LayerSpec> layers;     // [n_layers] what each layer does
  uint32_t kv_dim() const { return n_kv_heads * head_dim; }
  // The widest sliding window of any layer, 0 when every layer attends to every position.
  uint32_t max_window() const;
  uint32_t q_dim() const { return n_heads * head_dim; }
  // The most FFN rows any layer's gate (or one expert's gate) has: the size of FFN activations.
  uint32_t max_ffn_hidden() const;
  // Whether some layer carries a recurrent state per sequence (Mixer::kDeltaNet) that a KV cache
  // cannot hold: such a model cannot reuse a cached prefix or roll back drafted tokens.
  bool has_recurrent_layers() const;
  // Bytes of one sequence's recurrent state in every DeltaNet layer (f32 conv inputs and delta
  // matrices): what each state slot a runner keeps costs. 0 without recurrent layers.
  uint64_t recurrent_state_bytes() const;
  uint64_t n_attention_layers() const;  // the layers that keep keys and values (the KV pool's)
  // The layer whose keys and values layer l reads (itself unless it shares another's).
  uint32_t kv_layer(uint32_t l) const {
    return layers[l].attention.shares_kv() ? static_cast<uint32_t>(layers[l].attention.kv_from) : l;
  }

  // Throws vks::Error(kUnsupported) for an architecture not in the table (naming the supported
  // ones) and kCorrupt for missing or inconsistent keys, naming the key.
  static LlamaConfig from_gguf(const gguf::GgufFile& file);
};

// Parameters of the weight matrices (embeddings included, a tied output counted once): all of
// them, and those one token uses (n_used of each layer's experts).
struct ParameterCounts {
  uint64_t total = 0;
  uint64_t active = 0;
};
ParameterCounts count_parameters(const LlamaConfig& c);

}  // namespace vks
