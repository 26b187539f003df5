#include "engine/model/architecture.h"

namespace vks {
namespace {

using R = TensorRule;
using P = ProjectionLayout;
constexpr ExpertRouting kSoftmaxTopKNormalized{ExpertRouting::Order::kSoftmaxThenTopK, true};

// A new architecture that varies these behaviours is a row here. Rules follow llama.cpp's loader
// and graphs: llama may carry Q/K/V biases, rope factors and (Mixtral layout) experts; qwen2 always
// has the biases, qwen3 the Q/K norms, qwen3moe both Q/K norms and experts; phi3 fuses its
// projections. llama.cpp's build_moe_ffn renormalizes the chosen softmax weights for llama and
// qwen3moe. Gemma 2 and 3 scale embeddings, post-norm both sublayers, gate with GELU and window
// 1 of 2 (Gemma 2) or 5 of 6 (Gemma 3, whose local layers keep rope base 10000) layers; Gemma 2
// soft-caps attention scores and logits. gpt-oss windows every other layer, adds sinks and
// biases, and routes top-k then softmax through clamped SwiGLU experts. Gemma 4 (dense) gives its
// global layers wider heads, fewer KV heads and V = K, norms V, scales scores by 1 and each layer's
// output by a scalar; its MoE runs a dense MLP beside the experts. Qwen3.5 mixes Gated DeltaNet layers with gated, Q/K-normed attention, and
// names its pre-FFN norm post_attention_norm; its MoE adds a gated shared expert.
constexpr ArchitectureInfo kArchitectures[] = {
    {.arch = Arch::kLlama, .name = "llama", .rope_mode = RopeMode::kNorm, .qkv_bias = R::kOptional,
     .qk_norm = R::kAbsent, .rope_freqs = R::kOptional, .projections = P::kSeparate, .experts = R::kOptional,
     .routing = kSoftmaxTopKNormalized},
    {.arch = Arch::kQwen2, .name = "qwen2", .rope_mode = RopeMode::kNeox, .qkv_bias = R::kRequired,
     .qk_norm = R::kAbsent, .rope_freqs = R::kAbsent, .projections = P::kSeparate, .experts = R::kAbsent},
    {.arch = Arch::kQwen3, .name = "qwen3", .rope_mode = RopeMode::kNeox, .qkv_bias = R::kAbsent,
     .qk_norm = R::kRequired, .rope_freqs = R::kAbsent, .projections = P::kSeparate, .experts = R::kAbsent},
    {.arch = Arch::kQwen3Moe, .name = "qwen3moe", .rope_mode = RopeMode::kNeox, .qkv_bias = R::kAbsent,
     .qk_norm = R::kRequired, .rope_freqs = R::kAbsent, .projections = P::kSeparate, .experts = R::kRequired,
     .routing = kSoftmaxTopKNormalized},
    {.arch = Arch::kPhi3, .name = "phi3", .rope_mode = RopeMode::kNeox, .qkv_bias = R::kAbsent,
     .qk_norm = R::kAbsent, .rope_freqs = R::kAbsent, .projections = P::kFused, .experts = R::kAbsent},
    {.arch = Arch::kGemma2, .name = "gemma2", .rope_mode = RopeMode::kNeox, .qkv_bias = R::kAbsent,
     .qk_norm = R::kAbsent, .rope_freqs = R::kAbsent, .projections = P::kSeparate, .experts = R::kAbsent,
     .activation = FfnActivation::kGeluTanh, .window_period = 2, .attn_softcap = 50.0f, .final_softcap = 30.0f,
     .softcap_keys = true, .scale_embeddings = true, .post_norms = true, .dim_per_head_scale_layers = 46},
    {.arch = Arch::kGemma3, .name = "gemma3", .rope_mode = RopeMode::kNeox, .qkv_bias = R::kAbsent,
     .qk_norm = R::kRequired, .rope_freqs = R::kAbsent, .projections = P::kSeparate, .experts = R::kAbsent,
     .activation = FfnActivation::kGeluTanh, .window_period = 6, .local_rope_base = 10000.0f,
     .scale_embeddings = true, .post_norms = true, .dim_per_head_scale_layers = 62},
    {.arch = Arch::kGptOss, .name = "gpt-oss", .rope_mode = RopeMode::kNeox, .qkv_bias = R::kRequired,
     .qk_norm = R::kAbsent, .rope_freqs = R::kAbsent, .projections = P::kSeparate, .experts = R::kRequired,
     .routing = {ExpertRouting::Order::kTopKThenSoftmax, false}, .activation = FfnActivation::kSwigluOai,
     .window_period = 2, .ffn_norm = "post_attention_norm", .output_bias = R::kRequired, .sinks = R::kRequired,
     .expert_biases = R::kRequired},
    {.arch = Arch::kGemma4, .name = "gemma4", .rope_mode = RopeMode::kNeox, .qkv_bias = R::kAbsent,
     .qk_norm = R::kRequired, .rope_freqs = R::kOptional, .projections = P::kSeparate, .experts = R::kOptional,
     .routing = kSoftmaxTopKNormalized, .activation = FfnActivation::kGeluTanh, .window_period = 6, .softcap_keys = true, .scale_embeddings = true,
     .post_norms = true, .unit_attention_scale = true, .attn_v = R::kOptional, .value_norm = true,
     .layer_output_scale = true, .rope_factors_global_only = true, .dense_beside_experts = true},
    {.arch = Arch::kQwen35, .name = "qwen35", .rope_mode = RopeMode::kNeox, .qkv_bias = R::kAbsent,
     .qk_norm = R::kRequired, .rope_freqs = R::kAbsent, .projections = P::kSeparate, .experts = R::kAbsent,
     .ffn_norm = "post_attention_norm", .deltanet_layers = true},
    {.arch = Arch::kQwen35Moe, .name = "qwen35moe", .rope_mode = RopeMode::kNeox, .qkv_bias = R::kAbsent,
     .qk_norm = R::kRequired, .rope_freqs = R::kAbsent, .projections = P::kSeparate, .experts = R::kRequired,
     .routing = kSoftmaxTopKNormalized, .ffn_norm = "post_attention_norm", .deltanet_layers = true,
     .gated_shared_expert = true},
};

}  // namespace

const ArchitectureInfo* find_architecture(std::string_view name) {
  for (const ArchitectureInfo& a : kArchitectures) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const ArchitectureInfo& architecture_info(Arch arch) {
  for (const ArchitectureInfo& a : kArchitectures) {
    if (a.arch == arch) return a;
  }
  return kArchitectures[0];
}

std::string supported_architecture_names() {
  std::string list;
  for (const ArchitectureInfo& a : kArchitectures) list += (list.empty() ? "" : ", ") + std::string(a.name);
  return list;
}

std::string_view rope_mode_name(RopeMode mode) { return mode == RopeMode::kNeox ? "neox" : "norm"; }

}  // namespace vks
