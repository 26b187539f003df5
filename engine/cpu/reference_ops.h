#pragma once
// Plain C++ reference versions of every operation of the llama forward pass. The CPU model and
// runner are built from them, and the Vulkan kernel tests compare against them.
//
// Reduction order is fixed per output element (it never depends on how many tokens are computed
// together or on the thread count), so results are bit-identical however work is batched.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/cpu/attention_level.h"
#include "engine/cpu/exp_lanes.h"
#include "engine/cpu/tanh_lanes.h"
#include "engine/model/llama_model.h"

namespace vks {
class ThreadPool;
}

namespace vks::ref {

// Dot product of n floats, accumulated in 8 interleaved partial sums (lane j takes elements
// j, j+8, ...) added pairwise at the end, then the n % 8 tail in order. A fixed order that compilers
// vectorize.
float dot(const float* a, const float* b, size_t n);

// out[i] = x[i] / sqrt(mean(x²) + eps) * weight[i]   (x, out, weight: [n]; out may alias x)
void rmsnorm(float* out, const float* x, const float* weight, size_t n, float eps);

// y[t][r] = W[r] · x[t] for every token t: W is [rows, cols] in its GGUF type, x is [n_tokens, cols],
// y is [n_tokens, rows]. Each row of W is dequantized once and reused for every token; every
// y[t][r] is dot(dequantized W[r], x[t]). Rows are spread over the pool's threads (pool may be
// null: single-threaded).
void matmul(const TensorRef& w, const float* x, size_t n_tokens, float* y, ThreadPool* pool);
// matmul for one token.
inline void matvec(const TensorRef& w, const float* x, float* y, ThreadPool* pool) { matmul(w, x, 1, y, pool); }

// Rotary embedding as llama.cpp applies it. In each head of head_dim values, pair i (0 <= i <
// rope_dim/2) is rotated by the angle pos * rope_frequency(i) * angle_scale (below); cos and sin
// are multiplied by 1 + mscale_extra (YaRN's attention factor). NORM mode pairs (v[2i], v[2i+1])
// (llama); NEOX mode pairs (v[i], v[i + rope_dim/2]) (qwen2, qwen3, gemma, gpt-oss). Values past
// rope_dim are left as they are. vec: [n_heads * head_dim].
struct RopeParams {
  size_t rope_dim = 0;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // linear scaling; under YaRN, 1 / factor blended by the ramp below
  RopeMode mode = RopeMode::kNorm;
  const float* freq_factors = nullptr;  // [rope_dim / 2] or null
  // YaRN (ggml's rope_yarn with ext_factor 1): pairs below yarn_low keep their frequency, pairs
  // above yarn_high are interpolated by freq_scale, a linear ramp between.
  bool yarn = false;
  float yarn_low = 0.0f;
  float yarn_high = 0.0f;
  float mscale_extra = 0.0f;  // cos and sin are multiplied by 1 + mscale_extra (YaRN's attention factor)
};
void rope(float* vec, size_t n_heads, size_t head_dim, int32_t pos, const RopeParams& p);
// Pair i's angle per position before angle_scale: freq_base^(-2i/rope_dim) / freq_factors[i], under
// YaRN blended with its interpolation. Both backends take it from here (the Vulkan runner as a
// table, with angle_scale as a constant), so the angles agree to the bit.
float rope_frequency(size_t i, const RopeParams& p);
std::vector<float> rope_frequencies(const RopeParams& p);  // [rope_dim / 2]
// The factor applied after the table: freq_scale, or 1 under YaRN (the table holds the blend).
inline float rope_angle_scale(const RopeParams& p) { return p.yarn ? 1.0f : p.freq_scale; }
// A layer's rope (its base and scale: LayerSpec::attention); freq_factors: the model's
// rope_freqs.weight as floats ([rope_dim / 2]), or null.
RopeParams rope_params(const LlamaConfig& c, const AttentionSpec& layer, const float* freq_factors);
// NORM mode without frequency factors.
void rope_norm(float* vec, size_t n_heads, size_t head_dim, size_t rope_dim, int32_t pos, float freq_base,
               float freq_scale);

// Grouped-query attention of one query token over n_ctx cached positions (the last is the token's
// own). q: [n_heads * head_dim]; keys, values: [n_ctx, n_kv_heads * head_dim]; out: [n_heads *
// head_dim]. Query head h reads KV head h / (n_heads / n_kv_heads). Scores are q·k * scale,
// soft-capped where softcap > 0 (softcap * tanh(score / softcap)); softmax over positions in order
// 0..n_ctx-1 (max subtracted), with head h's sink logit in the denominator where sinks is set; the
// output sums probability-weighted values in the same order.
struct AttentionParams {
  size_t n_heads = 0;
  size_t n_kv_heads = 0;
  size_t head_dim = 0;
  float scale = 1.0f;
  float softcap = 0.0f;
  const float* sinks = nullptr;  // [n_heads] or null
  uint32_t window = 0;           // for the callers: 0, or how many of the latest positions a query sees
  size_t kv_stride = 0;          // floats between positions' key/value rows (0: n_kv_heads * head_dim)
  // The query heads computed: [head_begin, head_end), head_end 0 meaning n_heads (q and out keep
  // every head's place; a head's bits do not depend on which others run with it).
  size_t head_begin = 0;
  size_t head_end = 0;
  size_t heads_end() const { return head_end != 0 ? head_end : n_heads; }
};
void attention(float* out, const float* q, const float* keys, const float* values, size_t n_ctx,
               const AttentionParams& p);
// attention()'s score from a dot product (scaled, soft-capped where p.softcap > 0); its softmax is
// attention_rows.h's softmax_lanes.
inline float attention_score(float dot, const AttentionParams& p) {
  const float score = dot * p.scale;
  return p.softcap > 0.0f ? p.softcap * tanh_lanes(score / p.softcap) : score;
}
// The same over a paged pool (num_blocks blocks of block_size positions' rows of `stride` floats,
// laid out by KV head: paged_kv_layout.h): the rows of positions [first, first + n_ctx) through
// block_table, read in place, in attention()'s order (the same bits as gathering them first).
// level: the loop's instruction set (every level gives the same bits; tests compare them), lowered
// to the highest this CPU executes.
void attention_paged(float* out, const float* q, const float* key_pool, const float* value_pool,
                     std::span<const int32_t> block_table, size_t block_size, size_t first, size_t n_ctx,
                     size_t stride, const AttentionParams& p, AttendLevel level = fastest_attend_level());
// Scale 1/sqrt(head_dim), no soft-cap or sinks.
void attention(float* out, const float* q, const float* keys, const float* values, size_t n_ctx, size_t n_heads,
               size_t n_kv_heads, size_t head_dim);
// The first position a query at `pos` sees under `window` (0: none hidden).
inline size_t window_start(size_t pos, uint32_t window) { return window == 0 || pos < window ? 0 : pos + 1 - window; }

// RMSNorm of each of the n_heads heads of head_dim values in place, with one weight vector
// [head_dim] shared by all heads (qwen3's attn_q_norm / attn_k_norm).
void rmsnorm_heads(float* vec, const float* weight, size_t n_heads, size_t head_dim, float eps);

// x[i] += bias[i] for n values.
void add_bias(float* x, const float* bias, size_t n);

// 1 / (1 + e^-x): every gate of the forward pass (SwiGLU, attention's output gate, the shared
// expert's gate, Gated DeltaNet) uses this one expression, so the CPU paths agree bit for bit. V: a
// float or a vector of them (exp_lanes: every lane has the float's bits), so SwiGLU runs in lanes.
template <class V>
[[gnu::always_inline]] inline V sigmoid(V x) {
  return 1.0f / (1.0f + exp_lanes(-x));
}

// SwiGLU: out[i] = silu(gate[i]) * up[i], silu(x) = x * sigmoid(x). out may alias gate or up.
void swiglu(float* out, const float* gate, const float* up, size_t n);
// x[i] = silu(x[i]) in place, the same expression in lanes.
void silu(float* x, size_t n);
// GeGLU: out[i] = gelu(gate[i]) * up[i], GELU's tanh approximation (0.5 g (1 + tanh(z)), computed
// as g * sigmoid(2z)). out may alias gate.
void gelu_glu(float* out, const float* gate, const float* up, size_t n);
// gpt-oss's clamped SwiGLU: g = min(gate, 7), u = clamp(up, -7, 7), out = g * sigmoid(1.702 g) * (u + 1).
void swiglu_oai(float* out, const float* gate, const float* up, size_t n);
// The gated activation a feed-forward block's spec names.
void ffn_activation(FfnActivation act, float* out, const float* gate, const float* up, size_t n);
// x[i] = cap * tanh(x[i] / cap) (logit soft-capping; tanh_lanes).
void softcap(float* x, size_t n, float cap);

// Index of the largest value (the lowest index among equal maxima).
int32_t argmax(const float* x, size_t n);

}  // namespace vks::ref
