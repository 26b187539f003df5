#pragma once
// The CPU forward pass, written once: CpuModel::forward (one sequence, one token at a time) and
// CpuRunner::step (a paged, multi-sequence batch) both run these functions and differ only in
// where keys and values (and the DeltaNet layers' recurrent states) live (LayerKv). Layers differ by their description (LayerSpec: attention's
// window, rope, scale, soft-cap and sinks; post-norms; a dense or an expert feed-forward block and
// its activation) and their optional tensors: a layer adds biases when it has them, normalizes Q
// and K heads when it has attn_q_norm/attn_k_norm, and rope uses the architecture's mode and the
// model's rope_freqs factors.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/qmatmul.h"
#include "engine/cpu/recurrent_state.h"
#include "engine/cpu/reference_ops.h"
#include "engine/model/expert_routing.h"
#include "engine/model/llama_model.h"

namespace vks {

// F32 copies of a model's vector weights (norms, biases, rope factors), dequantized once. An
// empty vector is an absent optional tensor.
struct CpuLayerVectors {
  std::vector<float> attn_norm, ffn_norm;            // [dim]
  std::vector<float> bq, bk, bv, bo;                 // [q_dim], [kv_dim], [kv_dim], [dim]
  std::vector<float> q_norm, k_norm;                 // [head_dim]
  std::vector<float> sinks;                          // [n_heads]
  std::vector<float> post_attn_norm, post_ffn_norm;  // [dim]
  std::vector<float> router_bias;                    // [n_experts]
  std::vector<float> b_gate, b_up, b_down;           // [E * hidden], [E * hidden], [E * dim]
  std::vector<float> ones;                           // [head_dim] the weight of an unweighted V norm
  float output_scale = 1.0f;                         // Gemma 4's layer_output_scale
  std::vector<float> conv, dt_bias, ssm_a, ssm_norm;  // DeltaNet: [C * conv_kernel], [H], [H], [head_dim]
  std::vector<float> shared_gate_inp;                // [dim] the shared expert's gate (Qwen3.5 MoE)
  // Gemma 4's MoE: the split norms (post of the dense MLP, pre and post of the experts), the
  // router's input weight (ffn_gate_inp.scale / sqrt(dim), folded into one) and each expert's scale.
  std::vector<float> post_norm_shared, pre_norm_experts, post_norm_experts;  // [dim]
  std::vector<float> router_in_weight;               // [dim]
  std::vector<float> expert_scale;                   // [n_experts]
  std::vector<float> per_layer_post_norm;            // [dim] after the layer's per-layer input addition
  ref::RopeParams rope;  // this layer's rope (freq_factors points into CpuModelVectors::rope_freqs)
};
struct CpuModelVectors {
  std::vector<CpuLayerVectors> layers;
  std::vector<float> output_norm;  // [dim]
  std::vector<float> rope_freqs;   // [rope_dim / 2]
  std::vector<float> per_layer_proj_norm;  // [P] per-layer inputs' norm (LlamaConfig::per_layer_input_dim)

  explicit CpuModelVectors(const LlamaModel& model);
  CpuModelVectors(const CpuModelVectors&) = delete;  // rope.freq_factors points into this object
  CpuModelVectors& operator=(const CpuModelVectors&) = delete;
};

// Activations of the tokens of a step, token-major: [n_tokens, width].
struct CpuActivations {
  size_t n_tokens = 0;
  std::vector<float> x;     // residual stream [n, dim]
  std::vector<float> xb;    // normalized sublayer input [n, dim]
  std::vector<float> q;     // [n, q_dim]
  std::vector<float> k;     // [n, kv_dim] (roped)
  std::vector<float> v;     // [n, kv_dim]
  std::vector<float> att;   // attention output [n, q_dim]
  std::vector<float> proj;  // sublayer output before the residual add [n, dim]
  std::vector<float> gate;  // [n, hidden]; expert layers: [n * n_used, hidden], the rows of every expert in use
  std::vector<float> up;    // the same
  // Expert layers: router logits [n, n_experts], each token's chosen experts and weights [n, n_used],
  // every expert's tokens' inputs, expert by expert [n * n_used, dim] (then their outputs), and every
  // (token, choice)'s expert output [n * n_used, dim].
  std::vector<float> router_in;  // the router's input where it is not xb (RouterInput::kScaledNorm) [n, dim]
  std::vector<float> router_logits;
  std::vector<int32_t> expert_ids;
  std::vector<float> expert_weights;
  std::vector<float> expert_in;
  std::vector<float> expert_out;
  ExpertGroups expert_groups;  // the step's (token, choice) pairs by expert
  // Attention with an output gate: attn_q's rows [n, 2 * q_dim] and their gate half [n, q_dim].
  std::vector<float> q_and_gate, q_gate;
  // Gated DeltaNet layers: the conv's input (then output) [n, C], z [n, V], beta and alpha [n, H]
  // (then each head's beta and decay), and the gated output [n, V].
  std::vector<float> dn_qkv, dn_z, dn_beta, dn_alpha, dn_out;
  std::vector<float> shared_out;  // the shared expert's output [n, dim]
  // Per-layer inputs [n, n_layers * P], one token's rows of their table [n_layers * P] while they
  // are formed, and one layer's gated slice [n, P] (LlamaConfig::per_layer_input_dim).
  std::vector<float> per_layer_in, per_layer_tok, per_layer_gate;
  std::vector<cpuq::MatmulJob> jobs;  // the products of one dispatch (Q|K|V, gate|up, every expert's down)
  void resize(const LlamaConfig& c, size_t n);
};

// Where one layer's keys and values (attention) or its recurrent states (DeltaNet) live.
class LayerKv {
 public:
  virtual ~LayerKv() = default;
  // Stores the roped key and the value of token t, n_kv_heads rows of head_dim floats each (this
  // layer's KV heads; a position's rows take LlamaConfig::kv_dim() values of a pool). Called for
  // every token before any attend.
  virtual void store(size_t t, const float* k, const float* v, size_t n_kv_heads, size_t head_dim) = 0;
  // Attention of token t's query over its sequence's positions up to its own (the last p.window
  // of them where p.window > 0) into out [q_dim]. Called from pool threads for different tokens at
  // once.
  virtual void attend(size_t t, const float* q, const ref::AttentionParams& p, float* out) = 0;
  // A DeltaNet layer's state of token t's sequence, which token t advances (tokens of a sequence
  // run in order).
  virtual RecurrentState recurrent_state(size_t t) = 0;
};

// The weight products of a forward pass (ref::matmul's contract): the float reference for the
// oracle (CpuModel), the quantized integer kernels (cpuq::qmatmul) for the serving runner.
using MatmulFn = void (*)(const TensorRef& w, const float* x, size_t n_tokens, float* y, ThreadPool* pool);
// The serving runner's: cpuq::qmatmul (activations quantized per block, as llama.cpp; F32/F16/BF16
// weights give ref::matmul's bits there too). Given it, a layer runs the products that read one
// input (Q|K|V; gate|up of a block, of all its experts in use) in one pool dispatch, and every
// expert's down in one more (cpuq::qmatmul_jobs, the same bits); given another (ref::matmul), one
// call per product.
inline constexpr MatmulFn kQuantizedMatmul =
    static_cast<void (*)(const TensorRef&, const float*, size_t, float*, ThreadPool*)>(&cpuq::qmatmul);

// The forward pass reads the weights w of the model whose configuration is c: the model's own
// (CpuModel), or CpuRunner's copy of them (cpu_weights.h: in memory, some matrices packed).

// a.x[t] = the embedding of tokens[t] (ids already validated), and where the model has them the
// tokens' per-layer inputs (a.per_layer_in).
void cpu_embed(const LlamaConfig& c, const LlamaWeights& w, const CpuModelVectors& vec, const int32_t* tokens,
               CpuActivations& a, ThreadPool* pool, MatmulFn matmul);

// Runs layer l over every token of a (positions[t] is token t's position), updating a.x.
void cpu_layer(const LlamaConfig& c, const LlamaWeights& w, const CpuModelVectors& vec, size_t l,
               const int32_t* positions, CpuActivations& a, LayerKv& kv, ThreadPool* pool, MatmulFn matmul);

// Layer l's routed experts (spec.ffn.routed()) over the normed inputs a.xb into a.proj, the residual
// a.x read where the router norms it itself (RouterInput::kScaledNorm); a.n_tokens rows, a sized by
// resize(). cpu_layer runs it, and so does the Vulkan runner for layers whose experts stay in host
// memory (RunnerOptions::cpu_expert_layers).
void expert_ffn(const LlamaConfig& c, const FfnSpec& ffn, const LayerWeights& layer, const CpuLayerVectors& lv,
                CpuActivations& a, ThreadPool* pool, MatmulFn matmul);

// Final norm and logits of the tokens rows[0..n_rows): logits [n_rows, vocab]. The output matrix is
// dequantized once for all of them.
void cpu_logits(const LlamaConfig& c, const LlamaWeights& w, const CpuModelVectors& vec, const CpuActivations& a,
                const size_t* rows, size_t n_rows, float* logits, ThreadPool* pool, MatmulFn matmul);

}  // namespace vks
