#include "engine/cpu/cpu_model.h"

#include <algorithm>
#include <string>

#include "engine/common/error.h"
#include "engine/cpu/reference_ops.h"

namespace vks {

std::vector<float> dequantize_vector(const TensorRef& t) {
  std::vector<float> out(t.rows * t.cols);
  for (uint64_t r = 0; r < t.rows; ++r) dequantize_tensor_row(t, r, out.data() + r * t.cols);
  return out;
}

CpuModel::CpuModel(const LlamaModel& model, int threads, int32_t max_seq_len)
    : model_(model), config_(model.config()), pool_(threads) {
  const LlamaConfig& c = config_;
  max_seq_len_ = max_seq_len > 0 ? max_seq_len : static_cast<int32_t>(std::min<uint32_t>(c.context_length, 4096));
  if (max_seq_len_ <= 0) max_seq_len_ = 4096;
  for (const LayerWeights& layer : model.weights().layers) {
    attn_norm_.push_back(dequantize_vector(layer.attn_norm));
    ffn_norm_.push_back(dequantize_vector(layer.ffn_norm));
    key_cache_.emplace_back(static_cast<size_t>(max_seq_len_) * c.kv_dim());
    value_cache_.emplace_back(static_cast<size_t>(max_seq_len_) * c.kv_dim());
  }
  output_norm_ = dequantize_vector(model.weights().output_norm);
  x_.resize(c.dim);
  xb_.resize(c.dim);
  q_.resize(c.q_dim());
  att_.resize(c.q_dim());
  proj_.resize(c.dim);
  gate_.resize(c.hidden_dim);
  up_.resize(c.hidden_dim);
  logits_.resize(c.vocab_size);
}

const std::vector<float>& CpuModel::forward(int32_t token, int32_t pos) {
  const LlamaConfig& c = config_;
  const LlamaWeights& w = model_.weights();
  if (token < 0 || static_cast<uint32_t>(token) >= c.vocab_size) {
    throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(token) + " is outside the vocabulary (" +
                                                 std::to_string(c.vocab_size) + " tokens)");
  }
  if (pos < 0 || pos >= max_seq_len_ || pos > n_cached_) {
    throw Error(ErrorCode::kInvalidArgument, "position " + std::to_string(pos) + " is not valid: " +
                                                 std::to_string(n_cached_) + " positions cached, capacity " +
                                                 std::to_string(max_seq_len_));
  }
  const size_t dim = c.dim;
  const size_t kv_dim = c.kv_dim();
  const size_t n_ctx = static_cast<size_t>(pos) + 1;  // positions this token attends to

  // Embedding: the token's row of token_embd.
  dequantize_tensor_row(w.token_embd, static_cast<uint64_t>(token), x_.data());

  for (size_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& layer = w.layers[l];
    float* k = key_cache_[l].data() + static_cast<size_t>(pos) * kv_dim;    // this position's key row
    float* v = value_cache_[l].data() + static_cast<size_t>(pos) * kv_dim;  // and value row

    // Attention RMSNorm.
    ref::rmsnorm(xb_.data(), x_.data(), attn_norm_[l].data(), dim, c.norm_eps);
    // Q, K, V projections; K and V go straight into the cache.
    ref::matvec(layer.wq, xb_.data(), q_.data(), &pool_);
    ref::matvec(layer.wk, xb_.data(), k, &pool_);
    ref::matvec(layer.wv, xb_.data(), v, &pool_);
    // Rotary embedding of Q and K at this position.
    ref::rope_norm(q_.data(), c.n_heads, c.head_dim, c.rope_dim, pos, c.rope_freq_base, c.rope_freq_scale);
    ref::rope_norm(k, c.n_kv_heads, c.head_dim, c.rope_dim, pos, c.rope_freq_base, c.rope_freq_scale);
    // Grouped-query attention over positions 0..pos.
    ref::attention(att_.data(), q_.data(), key_cache_[l].data(), value_cache_[l].data(), n_ctx, c.n_heads,
                   c.n_kv_heads, c.head_dim);
    // Output projection and residual.
    ref::matvec(layer.wo, att_.data(), proj_.data(), &pool_);
    for (size_t i = 0; i < dim; ++i) x_[i] += proj_[i];

    // FFN RMSNorm.
    ref::rmsnorm(xb_.data(), x_.data(), ffn_norm_[l].data(), dim, c.norm_eps);
    // SwiGLU feed-forward: w_down(silu(w_gate x) * w_up x).
    ref::matvec(layer.w_gate, xb_.data(), gate_.data(), &pool_);
    ref::matvec(layer.w_up, xb_.data(), up_.data(), &pool_);
    ref::swiglu(gate_.data(), gate_.data(), up_.data(), c.hidden_dim);
    ref::matvec(layer.w_down, gate_.data(), proj_.data(), &pool_);
    // Residual.
    for (size_t i = 0; i < dim; ++i) x_[i] += proj_[i];
  }

  // Final RMSNorm.
  ref::rmsnorm(x_.data(), x_.data(), output_norm_.data(), dim, c.norm_eps);
  // Logits.
  ref::matvec(w.output, x_.data(), logits_.data(), &pool_);
  n_cached_ = pos + 1;
  return logits_;
}

}  // namespace vks
