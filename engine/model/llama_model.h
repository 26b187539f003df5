#pragma once
// A loaded llama-family GGUF (the architectures of architecture.h): the mapped file, its
// hyperparameters and views of every weight tensor. Weights stay in the mmap (no copy); matrices
// keep their GGUF type (any supported type of ggml_type.h, mixed freely). Tensors only some
// architectures have are std::optional: absent = nullopt, and the forward passes branch on them.
// Fused tensors (phi3's attn_qkv) are row ranges of one mapping; so are the experts of a layer.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_config.h"

namespace vks {

// How a matrix's blocks are laid out. kGguf: row after row, as in the file. kRows16: the CPU
// runner's copy of a matrix the kernel level reads packed (Q4_0/Q8_0 and the K-quants, from AVX-512
// VNNI on), rearranged for its kernels (engine/cpu/quant/packed_rows.h): groups of 16 rows,
// each group the same bytes as its 16 GGUF rows, so a group starts where its first row did, but a
// single row cannot be addressed.
enum class WeightLayout : uint8_t { kGguf, kRows16 };
inline constexpr uint64_t kRows16Group = 16;

// A weight tensor inside the mapping. A matrix W of `rows` x `cols` maps an input of `cols` to an
// output of `rows` (ggml dims: dims[0] = cols, dims[1] = rows); each row is ggml_row_size bytes.
struct TensorRef {
  std::string name;
  GgmlType type = GgmlType::kF32;
  uint64_t rows = 1;
  uint64_t cols = 0;
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  WeightLayout layout = WeightLayout::kGguf;
  // Pointer to row r (kRows16: to the group starting at r, a multiple of 16).
  const uint8_t* row(uint64_t r) const;
  // Rows [first, first + n) as a matrix of their own (same mapping, no copy). kRows16: first and n
  // multiples of 16 (an error otherwise).
  TensorRef rows_slice(uint64_t first, uint64_t n) const;
};

// A Gated DeltaNet layer's own tensors (LayerSpec::deltanet: C = conv_channels, V = v_dim, H = n_v_heads).
struct DeltaNetWeights {
  TensorRef qkv;       // [C, dim]   blk.N.attn_qkv.weight: q (n_groups heads), k (n_groups), v (n_v_heads)
  TensorRef z;         // [V, dim]   blk.N.attn_gate.weight: the output gate, silu(z)
  TensorRef beta;      // [H, dim]   blk.N.ssm_beta.weight: write strength, sigmoid(beta x)
  TensorRef alpha;     // [H, dim]   blk.N.ssm_alpha.weight: decay, softplus(alpha x + dt_bias) * a
  TensorRef out;       // [dim, V]   blk.N.ssm_out.weight
  TensorRef conv;      // [C, conv_kernel] blk.N.ssm_conv1d.weight (F32): channel c's taps, oldest first
  TensorRef dt_bias;   // [H]        blk.N.ssm_dt.bias (F32)
  TensorRef a;         // [H]        blk.N.ssm_a (F32): -exp(A_log)
  TensorRef norm;      // [head_dim] blk.N.ssm_norm.weight (F32): RMSNorm of each value head's output
};

// A shared expert (FfnSpec::shared_hidden S rows) and its gate.
struct SharedExpertWeights {
  TensorRef gate, up;  // [S, dim]  blk.N.ffn_gate_shexp.weight, ffn_up_shexp.weight (Gemma 4: ffn_gate, ffn_up)
  TensorRef down;      // [dim, S]  blk.N.ffn_down_shexp.weight (Gemma 4: ffn_down)
  std::optional<TensorRef> gate_inp;  // [dim] blk.N.ffn_gate_inp_shexp.weight (F32; FfnSpec::shared_gated)
};

// The norms of a feed-forward block whose shared MLP and experts are normed apart (FfnSpec::split_norms).
struct SplitFfnNorms {
  TensorRef post_shared;   // [dim] blk.N.post_ffw_norm_1.weight: after the dense MLP
  TensorRef pre_experts;   // [dim] blk.N.pre_ffw_norm_2.weight: the experts' input norm
  TensorRef post_experts;  // [dim] blk.N.post_ffw_norm_2.weight: after the experts' sum
};

// A layer's use of its per-layer input (LlamaConfig::per_layer_input_dim P; Gemma 4's "E" models):
// x += post_norm(proj(gelu(gate x) * its slice of the per-layer inputs)).
struct PerLayerInputWeights {
  TensorRef gate;       // [P, dim] blk.N.inp_gate.weight
  TensorRef proj;       // [dim, P] blk.N.proj.weight
  TensorRef post_norm;  // [dim]    blk.N.post_norm.weight (F32)
};

// The per-layer inputs of a step's tokens (L layers of P values each): (rmsnorm_P(model_proj(e) /
// sqrt(dim)) + token_embd[t] * sqrt(P)) / sqrt(2), e the scaled input embedding.
struct PerLayerInputTables {
  TensorRef token_embd;  // [vocab, L*P] per_layer_token_embd.weight
  TensorRef model_proj;  // [L*P, dim]   per_layer_model_proj.weight
  TensorRef proj_norm;   // [P]          per_layer_proj_norm.weight (F32)
};

struct LayerWeights {
  TensorRef attn_norm;  // [dim]                          blk.N.attn_norm.weight (F32)
  // Attention layers (Mixer::kAttention); a DeltaNet layer leaves these empty and has `deltanet`.
  TensorRef wq;         // [n_heads*head_dim, dim]        blk.N.attn_q.weight (x2 rows with an output gate)
  TensorRef wk;         // [n_kv_heads*head_dim, dim]     blk.N.attn_k.weight (none where the layer shares KV)
  TensorRef wv;         // [n_kv_heads*head_dim, dim]     blk.N.attn_v.weight
  TensorRef wo;         // [dim, n_heads*head_dim]        blk.N.attn_output.weight
  TensorRef ffn_norm;   // [dim]                          blk.N.ffn_norm.weight (F32)
  // The feed-forward block's experts stacked by rows (LayerSpec::ffn: E experts of H rows; a dense
  // block is one expert): expert e's gate is rows [e*H, (e+1)*H) of w_gate, its down projection
  // rows [e*dim, (e+1)*dim) of w_down (expert_matrix below).
  TensorRef w_gate;     // [E*H, dim]    blk.N.ffn_gate.weight, ffn_gate_exps (3-D), or phi3's ffn_up rows [0, H)
  TensorRef w_up;       // [E*H, dim]    blk.N.ffn_up.weight, ffn_up_exps, or phi3's ffn_up rows [H, 2H)
  TensorRef w_down;     // [E*dim, H]    blk.N.ffn_down.weight or ffn_down_exps
  std::optional<TensorRef> router;       // [E, dim] blk.N.ffn_gate_inp.weight: one logit per expert
  std::optional<TensorRef> bq;           // [n_heads*head_dim]     blk.N.attn_q.bias (F32; qwen2)
  std::optional<TensorRef> bk;           // [n_kv_heads*head_dim]  blk.N.attn_k.bias
  std::optional<TensorRef> bv;           // [n_kv_heads*head_dim]  blk.N.attn_v.bias
  std::optional<TensorRef> attn_q_norm;  // [head_dim] blk.N.attn_q_norm.weight: RMSNorm of each Q head
  std::optional<TensorRef> attn_k_norm;  // [head_dim] blk.N.attn_k_norm.weight: and of each K head,
                                         // after the projection, before rope (qwen3)
  std::optional<TensorRef> bo;           // [dim] blk.N.attn_output.bias (gpt-oss)
  std::optional<TensorRef> attn_sinks;   // [n_heads] blk.N.attn_sinks.weight: a logit per head (gpt-oss)
  std::optional<TensorRef> post_attn_norm;  // [dim] blk.N.post_attention_norm.weight (Gemma: LayerSpec::post_norms)
  std::optional<TensorRef> post_ffn_norm;   // [dim] blk.N.post_ffw_norm.weight
  // Expert biases (gpt-oss), stacked like their matrices: router [E], gate and up [E*H], down [E*dim].
  std::optional<TensorRef> router_bias;
  std::optional<TensorRef> b_gate, b_up, b_down;
  std::optional<TensorRef> output_scale;  // [1] blk.N.layer_output_scale.weight (Gemma 4)
  std::optional<DeltaNetWeights> deltanet;    // Mixer::kDeltaNet layers
  std::optional<SharedExpertWeights> shared;  // FfnSpec::has_shared()
  std::optional<SplitFfnNorms> split_norms;   // FfnSpec::split_norms
  std::optional<TensorRef> router_scale;      // [dim] blk.N.ffn_gate_inp.scale (RouterInput::kScaledNorm)
  std::optional<TensorRef> expert_scale;      // [E]   blk.N.ffn_down_exps.scale (FfnSpec::expert_scales)
  std::optional<PerLayerInputWeights> per_layer_input;  // LlamaConfig::per_layer_input_dim > 0
};

struct LlamaWeights {
  TensorRef token_embd;            // [vocab_size, dim]  token_embd.weight
  std::vector<LayerWeights> layers;
  TensorRef output_norm;           // [dim]              output_norm.weight (F32)
  TensorRef output;                // [vocab_size, dim]  output.weight, or token_embd if tied
  // [rope_dim/2] rope_freqs.weight (F32): rope frequency i is divided by rope_freqs[i] (Llama 3.1
  // rope scaling, precomputed by llama.cpp's converter).
  std::optional<TensorRef> rope_freqs;
  std::optional<PerLayerInputTables> per_layer_inputs;  // LlamaConfig::per_layer_input_dim > 0
};

class LlamaModel {
 public:
  // Opens, parses and validates a GGUF: a supported architecture, every tensor it needs present
  // with the expected shape and a supported type, no tensor it does not use. Throws vks::Error with a message that says what is wrong and what to do.
  static std::unique_ptr<LlamaModel> load(const std::string& path);
  static std::unique_ptr<LlamaModel> from_file(gguf::GgufFile file);

  const gguf::GgufFile& file() const { return file_; }
  const LlamaConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return weights_; }

 private:
  LlamaModel(gguf::GgufFile file, LlamaConfig config);
  gguf::GgufFile file_;
  LlamaConfig config_;
  LlamaWeights weights_;
};

// The weight matrices one decode step streams: every layer's projections, then the output matrix
// (norms and the token-embedding gather are small next to them).
std::vector<const TensorRef*> step_matrices(const LlamaWeights& w);
// Their bytes.
uint64_t step_matrix_bytes(const LlamaWeights& w);

// Expert e of a stacked expert matrix whose experts have `rows` rows each.
inline TensorRef expert_matrix(const TensorRef& stacked, uint32_t e, uint64_t rows) {
  return stacked.rows_slice(uint64_t{e} * rows, rows);
}

// The weight of the router's input norm under RouterInput::kScaledNorm: ffn_gate_inp.scale / sqrt(dim),
// llama.cpp's two factors folded into one (every backend uses this).
std::vector<float> scaled_norm_router_weight(const TensorRef& scale, uint32_t dim);

// Dequantize one row of a weight into floats (cols values).
void dequantize_tensor_row(const TensorRef& t, uint64_t row, float* out);

}  // namespace vks
