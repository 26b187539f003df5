#pragma once
// What a layer does, described by behaviour rather than by architecture name (zeux/calm's way):
// the loader (llama_config.cpp) fills it from GGUF keys and the architecture table, the CPU forward
// pass and the Vulkan step recorder read it, and nothing else needs to know which family a file is.
// A dense feed-forward block is an expert block with one expert and no router; a global attention
// layer is a window layer whose window is unbounded.
#include <cstdint>

namespace vks {

// How a router's logits choose and weigh the experts a token runs (llama.cpp's build_moe_ffn).
struct ExpertRouting {
  enum class Order : uint8_t {
    kSoftmaxThenTopK,  // p = softmax(all logits); the n_used largest p, weighted by p (qwen3moe, Mixtral)
    kTopKThenSoftmax,  // the n_used largest logits, weighted by softmax over those only (gpt-oss)
  };
  Order order = Order::kSoftmaxThenTopK;
  bool normalize = false;  // divide the chosen weights by their sum (llama.cpp's norm_w)
};

// The gate's activation in down(act(gate x, up x)).
enum class FfnActivation : uint8_t {
  kSilu,       // silu(g) * u
  kGeluTanh,   // gelu(g) * u, GELU's tanh approximation (Gemma)
  kSwigluOai,  // gpt-oss: g' = min(g, 7), u' = clamp(u, -7, 7), g' * sigmoid(1.702 g') * (u' + 1)
};

// What an expert layer's router reads.
enum class RouterInput : uint8_t {
  kFfnInput,    // the feed-forward block's normed input
  kScaledNorm,  // rms_norm(x) / sqrt(dim) * ffn_gate_inp.scale: the residual normed without a weight (Gemma 4)
};

struct FfnSpec {
  uint32_t hidden = 0;     // rows of each expert's gate and up matrices
  uint32_t n_experts = 1;  // 1: a dense block (no router); more: ffn_gate_inp picks n_used of them
  uint32_t n_used = 1;
  ExpertRouting routing;
  FfnActivation activation = FfnActivation::kSilu;
  // A shared expert every token runs beside the routed ones (ffn_{gate,up,down}_shexp), added to
  // their sum; gated: scaled by sigmoid(ffn_gate_inp_shexp · x), one scalar per token (Qwen3.5 MoE).
  uint32_t shared_hidden = 0;  // 0: none
  bool shared_gated = false;
  RouterInput router_input = RouterInput::kFfnInput;
  bool expert_scales = false;  // ffn_down_exps.scale: each expert's output times its own scalar (Gemma 4)
  // Gemma 4's MoE: the shared block is a dense MLP (ffn_gate/up/down) over ffn_norm(x), post-normed
  // by post_ffw_norm_1; the experts read their own norm of the residual (pre_ffw_norm_2) and their
  // sum is post-normed by post_ffw_norm_2; the two are added, then the layer's post-FFN norm.
  bool split_norms = false;
  bool routed() const { return n_experts > 1; }
  bool has_shared() const { return shared_hidden > 0; }
};

// Which keys a query sees, how its scores are formed, and the layer's head geometry (Gemma 4's
// global layers have wider heads and fewer KV heads than its window layers).
struct AttentionSpec {
  uint32_t head_dim = 0;     // this layer's Q/K/V head size
  uint32_t n_kv_heads = 0;   // this layer's KV heads
  uint32_t rope_dim = 0;     // rotated dims of each head
  bool rope_factors = true;  // rope_freqs.weight divides this layer's frequencies (where the model has it)
  bool value_from_key = false;  // no attn_v: V is the K projection, taken before K's norm (Gemma 4)
  bool value_norm = false;      // V RMS-normed per head without a weight (Gemma 4)
  uint32_t window = 0;       // 0: every position up to its own; W: only the last W (p-W+1..p)
  float rope_base = 10000.0f;
  float rope_scale = 1.0f;   // linear position scaling (1 / rope.scaling.factor); 1 under YaRN
  float scale = 0.0f;        // q·k multiplier (1/sqrt(head_dim) unless the architecture says otherwise)
  float softcap = 0.0f;      // 0: none; c: score = c * tanh(score / c) before the softmax (Gemma 2)
  bool sinks = false;        // blk.N.attn_sinks: one logit per head joins the softmax denominator (gpt-oss)
  // attn_q holds, per head, the query rows then as many gate rows; the attention output is
  // multiplied by sigmoid(gate) before attn_output (Qwen3.5's full-attention layers).
  bool output_gate = false;
  // A KV-sharing layer (Gemma 4's last attention.shared_kv_layers) has no K/V of its own: its query
  // attends to the cache of layer kv_from (the last earlier layer of its kind). -1: its own cache.
  int32_t kv_from = -1;
  bool windowed() const { return window > 0; }
  bool shares_kv() const { return kv_from >= 0; }
  uint32_t kv_dim() const { return n_kv_heads * head_dim; }
};

// A Gated DeltaNet layer (Qwen3.5's linear attention): per sequence it carries a recurrent state
// instead of keys and values, a causal depthwise conv over the last conv_kernel inputs of its
// q/k/v projection and one head_dim x head_dim delta-rule matrix per value head. Value head j reads
// q/k head j mod n_groups.
struct DeltaNetSpec {
  uint32_t conv_kernel = 0;  // ssm.conv_kernel: conv taps, the current token's included
  uint32_t head_dim = 0;     // ssm.state_size: the size of every q, k and v head
  uint32_t n_groups = 0;     // ssm.group_count: q/k heads
  uint32_t n_v_heads = 0;    // ssm.time_step_rank: value heads (ssm.inner_size = n_v_heads * head_dim)
  uint32_t qk_dim() const { return n_groups * head_dim; }
  uint32_t v_dim() const { return n_v_heads * head_dim; }
  uint32_t conv_channels() const { return 2 * qk_dim() + v_dim(); }  // q, k, v as attn_qkv lays them out
  // Floats of one sequence's state in this layer: the conv's previous inputs, the delta matrices.
  uint64_t conv_state_size() const { return uint64_t{conv_kernel - 1} * conv_channels(); }
  uint64_t delta_state_size() const { return uint64_t{n_v_heads} * head_dim * head_dim; }
};

// What mixes a token with the ones before it.
enum class Mixer : uint8_t {
  kAttention,  // over the paged KV cache
  kDeltaNet,   // a recurrent state per sequence (LayerSpec::deltanet)
};

struct LayerSpec {
  Mixer mixer = Mixer::kAttention;
  AttentionSpec attention;  // kAttention layers
  DeltaNetSpec deltanet;    // kDeltaNet layers
  FfnSpec ffn;
  // Gemma: each sublayer's output is RMS-normed (post_attention_norm, post_ffw_norm) before the
  // residual add.
  bool post_norms = false;
  // Gemma 4: the residual stream is multiplied by blk.N.layer_output_scale at the layer's end.
  bool output_scale = false;
};

}  // namespace vks
