#pragma once
// The shape, architecture and weight types of a synthetic llama-family model, with presets for real
// models' shapes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/gguf/ggml_type.h"

namespace vks::tools {

// How matrices get their types: all of one type, or one of llama.cpp's mixes ("file types").
enum class Recipe : uint8_t {
  kPure,    // every matrix of ModelSpec::type
  kQ4_K_M,  // Q4_K; Q6_K for the output matrix and attn_v/ffn_down of "more bits" layers
  kQ5_K_M,  // the same with Q5_K
};

struct ModelSpec {
  std::string name = "synthetic";
  uint32_t dim = 64;
  uint32_t n_layers = 2;
  uint32_t n_heads = 4;
  uint32_t n_kv_heads = 2;
  uint32_t hidden_dim = 192;
  uint32_t vocab_size = 512;
  uint32_t context_length = 256;
  float rope_freq_base = 10000.0f;
  float norm_eps = 1e-5f;
  bool tied_embeddings = false;
  std::string architecture = "llama";  // llama, qwen2 (adds Q/K/V biases), qwen3 (adds Q/K norms),
                                       // qwen3moe (Q/K norms, experts), phi3 (fused projections),
                                       // gemma2/gemma3 (post-norms, GELU, windows; gemma3 Q/K norms),
                                       // gpt-oss (biases, sinks, windows, MXFP4 experts),
                                       // qwen35/qwen35moe (Gated DeltaNet layers, below)
  uint32_t head_dim_override = 0;  // attention.key_length when the heads are not dim / n_heads wide
  // Experts (n_experts > 1): every layer's feed-forward block is n_experts experts of
  // expert_hidden_dim rows, n_experts_used per token, picked by an F32 router (ffn_gate_inp).
  uint32_t n_experts = 0;
  uint32_t n_experts_used = 0;
  uint32_t expert_hidden_dim = 0;
  // Sliding windows (gemma2, gemma3, gpt-oss): <arch>.attention.sliding_window; 0 = none (every
  // layer global). window_period writes attention.sliding_window_pattern (layer l slides when
  // l % period < period - 1); 0 leaves the key out, so llama.cpp's default period for the
  // architecture applies (gemma2 and gpt-oss 2, gemma3 6).
  uint32_t window = 0;
  uint32_t window_period = 0;
  float rope_freq_base_swa = 0.0f;  // rope.freq_base_swa when > 0 (else gemma3's local layers use 10000)
  // Soft-caps (gemma2's attn_logit_softcapping / final_logit_softcapping): written for architectures
  // that read them, with the architecture's defaults (50 and 30) where unset.
  std::optional<float> attn_softcap;
  std::optional<float> final_softcap;
  // YaRN (rope.scaling.type yarn): factor > 1 writes rope.scaling.{type,factor,original_context_length}.
  float yarn_factor = 0.0f;
  uint32_t yarn_original_context = 0;  // 0: context_length / yarn_factor
  // Type of the expert matrices (ffn_*_exps) instead of the recipe's; gpt-oss defaults to MXFP4.
  std::optional<GgmlType> expert_type;
  GgmlType type = GgmlType::kF32;  // every matrix (kPure) or the recipe's main type; norms are F32
  Recipe recipe = Recipe::kPure;
  // Type of output.weight (token_embd when tied) instead of the recipe's, as llama-quantize's
  // --output-tensor-type: e.g. Q6_K makes a Q4_0 file as llama-quantize writes one by default.
  std::optional<GgmlType> output_type;
  uint64_t seed = 1;
  float init_scale = 1.0f;         // matrix weights ~ N(0, init_scale^2 / cols)
  // Hybrid architectures (qwen35, qwen35moe): layer l is full attention when
  // (l + 1) % full_attention_interval == 0, else a Gated DeltaNet of these sizes (the ssm.* keys);
  // attention layers gate their output (attn_q twice as tall) and rope a quarter of each head.
  struct DeltaNet {
    uint32_t conv_kernel = 4;
    uint32_t head_dim = 128;  // ssm.state_size
    uint32_t groups = 16;     // q/k heads (ssm.group_count)
    uint32_t v_heads = 16;    // ssm.time_step_rank
    uint32_t full_attention_interval = 4;
  } deltanet;
  // qwen35moe: the gated shared expert's rows (expert_shared_feed_forward_length; 0: expert_hidden_dim).
  uint32_t shared_expert_hidden = 0;

  // The experts' type where it differs from the recipe's: expert_type, else MXFP4 for gpt-oss.
  std::optional<GgmlType> experts_type() const;
  uint32_t head_dim() const { return head_dim_override != 0 ? head_dim_override : dim / n_heads; }
  bool has_experts() const { return n_experts > 1; }
  bool hybrid() const;                     // an architecture with Gated DeltaNet layers
  bool recurrent_layer(uint32_t l) const;  // layer l is a Gated DeltaNet
  uint32_t shared_hidden() const;          // the shared expert's rows, 0 without one
  uint64_t n_parameters() const;
  uint64_t n_active_parameters() const;  // those one token uses (n_experts_used experts)
};

std::vector<std::string> preset_names();
// nullopt for an unknown name.
std::optional<ModelSpec> preset(const std::string& name);

// llama.cpp's general.file_type (LLAMA_FTYPE_*) for a model whose matrices are all of type t.
uint32_t llama_file_type(GgmlType t);
// ... and for a spec (its recipe's file type, e.g. 15 for Q4_K_M).
uint32_t llama_file_type(const ModelSpec& spec);

struct WeightFormat {
  GgmlType type;
  Recipe recipe;
};
// Parses a --type value: a type name the tool can write, or a recipe (q4_k_m, q5_k_m);
// case-insensitive. nullopt otherwise.
std::optional<WeightFormat> parse_weight_format(const std::string& s);
// "f32, ..., q6_K, q4_k_m, q5_k_m": what parse_weight_format accepts.
std::string weight_format_names();

// The type of the matrix `name` (a GGUF tensor name: "output.weight", "blk.3.attn_v.weight", ...)
// with rows of `cols` values under the spec's recipe. As llama.cpp's llama_tensor_get_type for
// these mixes: Q6_K for output (token_embd when tied) and for attn_v / ffn_down of layers where
// use_more_bits holds (the first and last eighth, and every third between); a K-quant whose
// 256-block does not divide cols falls back as llama.cpp does (Q4_K→Q5_0, Q5_K→Q5_1, Q6_K→Q8_0,
// Q2_K/Q3_K/IQ4_XS→IQ4_NL). spec.output_type, when set, is the output's
// type whatever the recipe (with the same fallback).
GgmlType matrix_type(const ModelSpec& spec, const std::string& name, uint64_t cols);
// Parses a type name (case-insensitive) of a type the tool can write (one with a quantizer in
// ggml_type.cpp's table); nullopt otherwise.
std::optional<GgmlType> parse_weight_type(const std::string& s);
// "f32, f16, ...": the types parse_weight_type accepts, for help and messages.
std::string weight_type_names();

// Throws vks::Error(kInvalidArgument) naming the first impossible setting.
void validate(const ModelSpec& spec);

}  // namespace vks::tools
