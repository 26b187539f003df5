#include "engine/cpu/cpu_layer.h"

#include <algorithm>

#include "engine/cpu/cpu_model.h"
#include "engine/model/expert_routing.h"

namespace vks {
namespace {

std::vector<float> optional_vector(const std::optional<TensorRef>& t) {
  return t ? dequantize_vector(*t) : std::vector<float>();
}

// y = down(silu(gate x) * up x) for n tokens (x: [n, dim] -> y: [n, dim]), through a.gate and a.up.
void swiglu_ffn(const TensorRef& gate, const TensorRef& up, const TensorRef& down, const float* x, size_t n,
                float* y, CpuActivations& a, ThreadPool* pool, MatmulFn matmul) {
  matmul(gate, x, n, a.gate.data(), pool);
  matmul(up, x, n, a.up.data(), pool);
  ref::swiglu(a.gate.data(), a.gate.data(), a.up.data(), n * gate.rows);
  matmul(down, a.gate.data(), n, y, pool);
}

// The expert block over the normed inputs a.xb: each token runs the experts its router picks, and
// x += the weighted sum of their outputs, added in the router's order (llama.cpp's build_moe_ffn).
// Tokens are grouped by expert, so each expert's rows are read once per step; a token's values do
// not depend on which other tokens share its experts.
void expert_ffn(const LlamaConfig& c, const FfnSpec& ffn, const LayerWeights& layer, CpuActivations& a,
                ThreadPool* pool, MatmulFn matmul) {
  const size_t n = a.n_tokens, dim = c.dim, k = ffn.n_used;
  matmul(*layer.router, a.xb.data(), n, a.router_logits.data(), pool);
  for (size_t t = 0; t < n; ++t) {
    route_experts(&a.router_logits[t * ffn.n_experts], ffn, &a.expert_ids[t * k], &a.expert_weights[t * k]);
  }
  group_by_expert(a.expert_ids.data(), n * k, ffn.n_experts, a.expert_groups);
  for (uint32_t e = 0; e < ffn.n_experts; ++e) {
    const uint32_t m = a.expert_groups.count(e);
    if (m == 0) continue;
    const uint32_t* choices = &a.expert_groups.choices[a.expert_groups.starts[e]];  // token * k + slot
    for (uint32_t j = 0; j < m; ++j) std::copy_n(&a.xb[(choices[j] / k) * dim], dim, &a.expert_in[j * dim]);
    swiglu_ffn(expert_matrix(layer.w_gate, e, ffn.hidden), expert_matrix(layer.w_up, e, ffn.hidden),
               expert_matrix(layer.w_down, e, dim), a.expert_in.data(), m, a.proj.data(), a, pool, matmul);
    for (uint32_t j = 0; j < m; ++j) std::copy_n(&a.proj[j * dim], dim, &a.expert_out[size_t{choices[j]} * dim]);
  }
  for (size_t t = 0; t < n; ++t) {
    for (size_t i = 0; i < dim; ++i) {
      float sum = a.expert_weights[t * k] * a.expert_out[(t * k) * dim + i];
      for (size_t s = 1; s < k; ++s) sum += a.expert_weights[t * k + s] * a.expert_out[(t * k + s) * dim + i];
      a.x[t * dim + i] += sum;
    }
  }
}

}  // namespace

CpuModelVectors::CpuModelVectors(const LlamaModel& model) {
  const LlamaConfig& c = model.config();
  const LlamaWeights& w = model.weights();
  for (const LayerWeights& layer : w.layers) {
    CpuLayerVectors& v = layers.emplace_back();
    v.attn_norm = dequantize_vector(layer.attn_norm);
    v.ffn_norm = dequantize_vector(layer.ffn_norm);
    v.bq = optional_vector(layer.bq);
    v.bk = optional_vector(layer.bk);
    v.bv = optional_vector(layer.bv);
    v.q_norm = optional_vector(layer.attn_q_norm);
    v.k_norm = optional_vector(layer.attn_k_norm);
  }
  output_norm = dequantize_vector(w.output_norm);
  rope_freqs = optional_vector(w.rope_freqs);
  rope = ref::rope_params(c, rope_freqs.empty() ? nullptr : rope_freqs.data());
}

void CpuActivations::resize(const LlamaConfig& c, size_t n) {
  n_tokens = n;
  x.resize(n * c.dim);
  xb.resize(n * c.dim);
  q.resize(n * c.q_dim());
  k.resize(n * c.kv_dim());
  v.resize(n * c.kv_dim());
  att.resize(n * c.q_dim());
  proj.resize(n * c.dim);
  gate.resize(n * c.max_ffn_hidden());
  up.resize(n * c.max_ffn_hidden());
  if (c.n_experts > 1) {
    router_logits.resize(n * c.n_experts);
    expert_ids.resize(n * c.n_experts_used);
    expert_weights.resize(n * c.n_experts_used);
    expert_in.resize(n * c.dim);
    expert_out.resize(n * c.n_experts_used * c.dim);
  }
}

void cpu_embed(const LlamaModel& model, const int32_t* tokens, CpuActivations& a) {
  const size_t dim = model.config().dim;
  for (size_t t = 0; t < a.n_tokens; ++t) {
    dequantize_tensor_row(model.weights().token_embd, static_cast<uint64_t>(tokens[t]), &a.x[t * dim]);
  }
}

void cpu_layer(const LlamaModel& model, const CpuModelVectors& vec, size_t l, const int32_t* positions,
               CpuActivations& a, LayerKv& kv, ThreadPool* pool, MatmulFn matmul) {
  const LlamaConfig& c = model.config();
  const LayerWeights& layer = model.weights().layers[l];
  const CpuLayerVectors& lv = vec.layers[l];
  const size_t n = a.n_tokens;
  const size_t dim = c.dim;
  const size_t q_dim = c.q_dim();
  const size_t kv_dim = c.kv_dim();

  // Attention RMSNorm.
  for (size_t t = 0; t < n; ++t) ref::rmsnorm(&a.xb[t * dim], &a.x[t * dim], lv.attn_norm.data(), dim, c.norm_eps);
  // Q, K, V projections.
  matmul(layer.wq, a.xb.data(), n, a.q.data(), pool);
  matmul(layer.wk, a.xb.data(), n, a.k.data(), pool);
  matmul(layer.wv, a.xb.data(), n, a.v.data(), pool);
  for (size_t t = 0; t < n; ++t) {
    float* q = &a.q[t * q_dim];
    float* k = &a.k[t * kv_dim];
    float* v = &a.v[t * kv_dim];
    // Biases (qwen2), per-head Q/K norms (qwen3), then rope; K and V go to the cache.
    if (layer.bq) ref::add_bias(q, lv.bq.data(), q_dim);
    if (layer.bk) ref::add_bias(k, lv.bk.data(), kv_dim);
    if (layer.bv) ref::add_bias(v, lv.bv.data(), kv_dim);
    if (layer.attn_q_norm) ref::rmsnorm_heads(q, lv.q_norm.data(), c.n_heads, c.head_dim, c.norm_eps);
    if (layer.attn_k_norm) ref::rmsnorm_heads(k, lv.k_norm.data(), c.n_kv_heads, c.head_dim, c.norm_eps);
    ref::rope(q, c.n_heads, c.head_dim, positions[t], vec.rope);
    ref::rope(k, c.n_kv_heads, c.head_dim, positions[t], vec.rope);
    kv.store(t, k, v);
  }
  // Attention of each token over its sequence's cached positions.
  auto attend = [&](size_t t) { kv.attend(t, &a.q[t * q_dim], &a.att[t * q_dim]); };
  if (pool != nullptr && n > 1) {
    pool->parallel_for(n, attend);
  } else {
    for (size_t t = 0; t < n; ++t) attend(t);
  }
  // Output projection and residual.
  matmul(layer.wo, a.att.data(), n, a.proj.data(), pool);
  for (size_t i = 0; i < n * dim; ++i) a.x[i] += a.proj[i];

  // FFN RMSNorm, then the feed-forward block w_down(silu(w_gate x) * w_up x): one dense block, or
  // the experts the router picks; residual.
  for (size_t t = 0; t < n; ++t) ref::rmsnorm(&a.xb[t * dim], &a.x[t * dim], lv.ffn_norm.data(), dim, c.norm_eps);
  const FfnSpec& ffn = c.layers[l].ffn;
  if (ffn.routed()) {
    expert_ffn(c, ffn, layer, a, pool, matmul);
  } else {
    swiglu_ffn(layer.w_gate, layer.w_up, layer.w_down, a.xb.data(), n, a.proj.data(), a, pool, matmul);
    for (size_t i = 0; i < n * dim; ++i) a.x[i] += a.proj[i];
  }
}

void cpu_logits(const LlamaModel& model, const CpuModelVectors& vec, const CpuActivations& a, const size_t* rows,
                size_t n_rows, float* logits, ThreadPool* pool, MatmulFn matmul) {
  const LlamaConfig& c = model.config();
  const size_t dim = c.dim;
  std::vector<float> last(n_rows * dim);  // [n_rows, dim] normalized final states
  for (size_t o = 0; o < n_rows; ++o) {
    ref::rmsnorm(&last[o * dim], &a.x[rows[o] * dim], vec.output_norm.data(), dim, c.norm_eps);
  }
  matmul(model.weights().output, last.data(), n_rows, logits, pool);
}

}  // namespace vks
