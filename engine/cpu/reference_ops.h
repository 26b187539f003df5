#pragma once
// Plain C++ reference versions of every operation of the llama forward pass. The CPU model and
// runner are built from them, and the Vulkan kernel tests compare against them.
//
// Reduction order is fixed per output element (it never depends on how many tokens are computed
// together or on the thread count), so results are bit-identical however work is batched.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

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
// rope_dim/2) is rotated by the angle pos * freq_base^(-2i/rope_dim) / freq_factors[i] * freq_scale
// (freq_factors may be null: all 1). NORM mode pairs (v[2i], v[2i+1]) (llama); NEOX mode pairs
// (v[i], v[i + rope_dim/2]) (qwen2, qwen3). Values past rope_dim are left as they are.
// vec: [n_heads * head_dim].
struct RopeParams {
  size_t rope_dim = 0;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  RopeMode mode = RopeMode::kNorm;
  const float* freq_factors = nullptr;  // [rope_dim / 2] or null
};
void rope(float* vec, size_t n_heads, size_t head_dim, int32_t pos, const RopeParams& p);
// Pair i's angle per position before freq_scale: freq_base^(-2i/rope_dim) / freq_factors[i]. Both
// backends take it from here (the Vulkan runner as a table), so the angles agree to the bit.
float rope_frequency(size_t i, const RopeParams& p);
std::vector<float> rope_frequencies(const RopeParams& p);  // [rope_dim / 2]
// The model's rope; freq_factors: its rope_freqs.weight as floats ([rope_dim / 2]), or null.
RopeParams rope_params(const LlamaConfig& c, const float* freq_factors);
// NORM mode without frequency factors.
void rope_norm(float* vec, size_t n_heads, size_t head_dim, size_t rope_dim, int32_t pos, float freq_base,
               float freq_scale);

// Causal grouped-query attention of one query token over n_ctx cached positions (the token's own
// position included, as the last). q: [n_heads * head_dim]; keys, values: [n_ctx, n_kv_heads *
// head_dim]; out: [n_heads * head_dim]. Query head h reads KV head h / (n_heads / n_kv_heads).
// Scores are q·k / sqrt(head_dim), softmax over positions in order 0..n_ctx-1 (max subtracted),
// and the output sums probability-weighted values in the same order.
void attention(float* out, const float* q, const float* keys, const float* values, size_t n_ctx, size_t n_heads,
               size_t n_kv_heads, size_t head_dim);

// RMSNorm of each of the n_heads heads of head_dim values in place, with one weight vector
// [head_dim] shared by all heads (qwen3's attn_q_norm / attn_k_norm).
void rmsnorm_heads(float* vec, const float* weight, size_t n_heads, size_t head_dim, float eps);

// x[i] += bias[i] for n values.
void add_bias(float* x, const float* bias, size_t n);

// SwiGLU: out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + e^-x). out may alias gate.
void swiglu(float* out, const float* gate, const float* up, size_t n);

// Copies the rows of positions [0, n_ctx) of a paged pool ([num_blocks * block_size, width])
// into out ([n_ctx, width]) in position order, following block_table.
void gather_paged_rows(const float* pool, std::span<const int32_t> block_table, size_t block_size, size_t n_ctx,
                       size_t width, float* out);

// Index of the largest value (the lowest index among equal maxima).
int32_t argmax(const float* x, size_t n);

}  // namespace vks::ref
