#include "engine/cpu/cpu_layer.h"

#include <algorithm>
#include <cmath>

#include "engine/cpu/cpu_deltanet.h"
#include "engine/cpu/cpu_model.h"
#include "engine/model/expert_routing.h"

namespace vks {
namespace {

std::vector<float> optional_vector(const std::optional<TensorRef>& t) {
  return t ? dequantize_vector(*t) : std::vector<float>();
}

// Rows [e * n, (e + 1) * n) of stacked per-expert vectors, or null where there are none.
const float* expert_row(const std::vector<float>& stacked, uint32_t e, size_t n) {
  return stacked.empty() ? nullptr : &stacked[e * n];
}

void add_bias_rows(float* y, const float* bias, size_t n_rows, size_t width) {
  if (bias == nullptr) return;
  for (size_t r = 0; r < n_rows; ++r) ref::add_bias(&y[r * width], bias, width);
}

// The products of jobs: with the quantized kernels in one pool dispatch, else one call each.
void run_jobs(const std::vector<cpuq::MatmulJob>& jobs, ThreadPool* pool, MatmulFn matmul) {
  if (matmul == kQuantizedMatmul) {
    cpuq::qmatmul_jobs(jobs.data(), jobs.size(), pool);
    return;
  }
  for (const cpuq::MatmulJob& job : jobs) {
    if (job.first_row == 0 && job.rows == job.w->rows) {
      matmul(*job.w, job.x, job.n_tokens, job.y, pool);
    } else {
      matmul(job.w->rows_slice(job.first_row, job.rows), job.x, job.n_tokens, job.y, pool);
    }
  }
}

// The job of a whole matrix: y [n, w.rows] = w x [n, w.cols].
cpuq::MatmulJob whole(const TensorRef& w, const float* x, size_t n, float* y) { return {&w, 0, w.rows, x, n, y}; }

// y = down(act(gate x, up x)) for n tokens of a dense block (x: [n, dim] -> y: [n, dim]), through
// a.gate and a.up; gate and up in one dispatch.
void ffn_block(const TensorRef& gate, const TensorRef& up, const TensorRef& down, FfnActivation act, const float* x,
               size_t n, float* y, CpuActivations& a, ThreadPool* pool, MatmulFn matmul) {
  a.jobs.clear();
  a.jobs.push_back(whole(gate, x, n, a.gate.data()));
  a.jobs.push_back(whole(up, x, n, a.up.data()));
  run_jobs(a.jobs, pool, matmul);
  ref::ffn_activation(act, a.gate.data(), a.gate.data(), a.up.data(), n * gate.rows);
  matmul(down, a.gate.data(), n, y, pool);
}

// The experts in use of an expert block over their tokens' gathered inputs a.expert_in (expert e's
// rows from a.expert_groups.starts[e] on), each expert's outputs written over its inputs: gate and
// up of every expert in one dispatch, then the activation, then every down in one, so the block
// costs two dispatches whatever the number of experts (llama.cpp's mul_mat_id); each row gets the
// bits of its expert's products alone.
void run_experts(const LlamaConfig& c, const FfnSpec& ffn, const LayerWeights& layer, const CpuLayerVectors& lv,
                 CpuActivations& a, ThreadPool* pool, MatmulFn matmul) {
  const size_t dim = c.dim, hidden = ffn.hidden;
  const ExpertGroups& groups = a.expert_groups;
  std::vector<cpuq::MatmulJob>& jobs = a.jobs;
  jobs.clear();
  for (uint32_t e = 0; e < ffn.n_experts; ++e) {
    const size_t first = groups.starts[e], m = groups.count(e);
    if (m == 0) continue;
    const float* x = &a.expert_in[first * dim];
    jobs.push_back({&layer.w_gate, uint64_t{e} * hidden, hidden, x, m, &a.gate[first * hidden]});
    jobs.push_back({&layer.w_up, uint64_t{e} * hidden, hidden, x, m, &a.up[first * hidden]});
  }
  run_jobs(jobs, pool, matmul);
  const size_t rows = groups.starts[ffn.n_experts];  // every (token, choice)
  for (uint32_t e = 0; e < ffn.n_experts; ++e) {
    const size_t first = groups.starts[e], m = groups.count(e);
    add_bias_rows(&a.gate[first * hidden], expert_row(lv.b_gate, e, hidden), m, hidden);
    add_bias_rows(&a.up[first * hidden], expert_row(lv.b_up, e, hidden), m, hidden);
  }
  ref::ffn_activation(ffn.activation, a.gate.data(), a.gate.data(), a.up.data(), rows * hidden);
  jobs.clear();
  for (uint32_t e = 0; e < ffn.n_experts; ++e) {
    const size_t first = groups.starts[e], m = groups.count(e);
    if (m == 0) continue;
    jobs.push_back({&layer.w_down, uint64_t{e} * dim, dim, &a.gate[first * hidden], m, &a.expert_in[first * dim]});
  }
  run_jobs(jobs, pool, matmul);
  for (uint32_t e = 0; e < ffn.n_experts; ++e) {
    const size_t first = groups.starts[e], m = groups.count(e);
    add_bias_rows(&a.expert_in[first * dim], expert_row(lv.b_down, e, dim), m, dim);
  }
}

}  // namespace

// The expert block over the normed inputs a.xb into a.proj: each token runs the experts its router
// picks, and its output is the weighted sum of theirs, added in the router's order (llama.cpp's
// build_moe_ffn). Tokens are grouped by expert, so each expert's rows are read once per step; a
// token's values do not depend on which other tokens share its experts.
void expert_ffn(const LlamaConfig& c, const FfnSpec& ffn, const LayerWeights& layer, const CpuLayerVectors& lv,
                CpuActivations& a, ThreadPool* pool, MatmulFn matmul) {
  const size_t n = a.n_tokens, dim = c.dim, k = ffn.n_used;
  const float* router_in = a.xb.data();
  if (ffn.router_input == RouterInput::kScaledNorm) {  // Gemma 4: the residual's norm, scaled per channel
    for (size_t t = 0; t < n; ++t) {
      ref::rmsnorm(&a.router_in[t * dim], &a.x[t * dim], lv.router_in_weight.data(), dim, c.norm_eps);
    }
    router_in = a.router_in.data();
  }
  matmul(*layer.router, router_in, n, a.router_logits.data(), pool);
  add_bias_rows(a.router_logits.data(), lv.router_bias.empty() ? nullptr : lv.router_bias.data(), n, ffn.n_experts);
  for (size_t t = 0; t < n; ++t) {
    route_experts(&a.router_logits[t * ffn.n_experts], ffn, &a.expert_ids[t * k], &a.expert_weights[t * k],
                  lv.expert_scale.empty() ? nullptr : lv.expert_scale.data());
  }
  group_by_expert(a.expert_ids.data(), n * k, ffn.n_experts, a.expert_groups);
  const uint32_t* choices = a.expert_groups.choices.data();  // token * k + slot, expert by expert
  for (size_t j = 0; j < n * k; ++j) std::copy_n(&a.xb[(choices[j] / k) * dim], dim, &a.expert_in[j * dim]);
  run_experts(c, ffn, layer, lv, a, pool, matmul);
  for (size_t j = 0; j < n * k; ++j) std::copy_n(&a.expert_in[j * dim], dim, &a.expert_out[size_t{choices[j]} * dim]);
  for (size_t t = 0; t < n; ++t) {
    for (size_t i = 0; i < dim; ++i) {
      float sum = a.expert_weights[t * k] * a.expert_out[(t * k) * dim + i];
      for (size_t s = 1; s < k; ++s) sum += a.expert_weights[t * k + s] * a.expert_out[(t * k + s) * dim + i];
      a.proj[t * dim + i] = sum;
    }
  }
}

namespace {

// a.shared_out = the shared expert's output for every token over a.xb, scaled by
// sigmoid(gate_inp · a.xb) where it is gated, post-normed where the block's norms are split.
void shared_expert_ffn(const LlamaConfig& c, const FfnSpec& ffn, const SharedExpertWeights& w,
                       const CpuLayerVectors& lv, CpuActivations& a, ThreadPool* pool, MatmulFn matmul) {
  const size_t n = a.n_tokens, dim = c.dim;
  ffn_block(w.gate, w.up, w.down, ffn.activation, a.xb.data(), n, a.shared_out.data(), a, pool, matmul);
  for (size_t t = 0; t < n; ++t) {
    float* out = &a.shared_out[t * dim];
    if (ffn.split_norms) ref::rmsnorm(out, out, lv.post_norm_shared.data(), dim, c.norm_eps);
    if (!ffn.shared_gated) continue;
    float logit = 0.0f;
    for (size_t i = 0; i < dim; ++i) logit += lv.shared_gate_inp[i] * a.xb[t * dim + i];
    const float scale = ref::sigmoid(logit);
    for (size_t i = 0; i < dim; ++i) out[i] *= scale;
  }
}

// x += sublayer output (a.proj), RMS-normed first where the layer post-norms (Gemma).
void add_residual(const LlamaConfig& c, const std::vector<float>& post_norm, CpuActivations& a) {
  const size_t dim = c.dim;
  if (!post_norm.empty()) {
    for (size_t t = 0; t < a.n_tokens; ++t) {
      ref::rmsnorm(&a.proj[t * dim], &a.proj[t * dim], post_norm.data(), dim, c.norm_eps);
    }
  }
  for (size_t i = 0; i < a.n_tokens * dim; ++i) a.x[i] += a.proj[i];
}

// Gemma 4's per-layer input of layer l: x += post_norm(proj(gelu(gate x) * its slice of a.per_layer_in)).
void per_layer_input(const LlamaConfig& c, const PerLayerInputWeights& w, const CpuLayerVectors& lv, size_t l,
                     CpuActivations& a, ThreadPool* pool, MatmulFn matmul) {
  const size_t n = a.n_tokens, p = c.per_layer_input_dim, all = p * c.n_layers;
  matmul(w.gate, a.x.data(), n, a.per_layer_gate.data(), pool);
  for (size_t t = 0; t < n; ++t) {
    float* g = &a.per_layer_gate[t * p];
    ref::gelu_glu(g, g, &a.per_layer_in[t * all + l * p], p);
  }
  matmul(w.proj, a.per_layer_gate.data(), n, a.proj.data(), pool);
  add_residual(c, lv.per_layer_post_norm, a);
}

}  // namespace

CpuModelVectors::CpuModelVectors(const LlamaModel& model) {
  const LlamaConfig& c = model.config();
  const LlamaWeights& w = model.weights();
  output_norm = dequantize_vector(w.output_norm);
  rope_freqs = optional_vector(w.rope_freqs);
  if (w.per_layer_inputs) per_layer_proj_norm = dequantize_vector(w.per_layer_inputs->proj_norm);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& layer = w.layers[l];
    CpuLayerVectors& v = layers.emplace_back();
    v.attn_norm = dequantize_vector(layer.attn_norm);
    v.ffn_norm = dequantize_vector(layer.ffn_norm);
    v.bq = optional_vector(layer.bq);
    v.bk = optional_vector(layer.bk);
    v.bv = optional_vector(layer.bv);
    v.bo = optional_vector(layer.bo);
    v.q_norm = optional_vector(layer.attn_q_norm);
    v.k_norm = optional_vector(layer.attn_k_norm);
    v.sinks = optional_vector(layer.attn_sinks);
    v.post_attn_norm = optional_vector(layer.post_attn_norm);
    v.post_ffn_norm = optional_vector(layer.post_ffn_norm);
    v.router_bias = optional_vector(layer.router_bias);
    v.b_gate = optional_vector(layer.b_gate);
    v.b_up = optional_vector(layer.b_up);
    v.b_down = optional_vector(layer.b_down);
    v.rope = ref::rope_params(c, c.layers[l].attention, rope_freqs.empty() ? nullptr : rope_freqs.data());
    if (c.layers[l].attention.value_norm) v.ones.assign(c.layers[l].attention.head_dim, 1.0f);
    if (layer.output_scale) v.output_scale = dequantize_vector(*layer.output_scale).front();
    if (layer.deltanet) {
      v.conv = dequantize_vector(layer.deltanet->conv);
      v.dt_bias = dequantize_vector(layer.deltanet->dt_bias);
      v.ssm_a = dequantize_vector(layer.deltanet->a);
      v.ssm_norm = dequantize_vector(layer.deltanet->norm);
    }
    if (layer.shared && layer.shared->gate_inp) v.shared_gate_inp = dequantize_vector(*layer.shared->gate_inp);
    if (layer.split_norms) {
      v.post_norm_shared = dequantize_vector(layer.split_norms->post_shared);
      v.pre_norm_experts = dequantize_vector(layer.split_norms->pre_experts);
      v.post_norm_experts = dequantize_vector(layer.split_norms->post_experts);
    }
    if (layer.router_scale) v.router_in_weight = scaled_norm_router_weight(*layer.router_scale, c.dim);
    if (layer.expert_scale) v.expert_scale = dequantize_vector(*layer.expert_scale);
    if (layer.per_layer_input) v.per_layer_post_norm = dequantize_vector(layer.per_layer_input->post_norm);
  }
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
  size_t hidden_floats = n * size_t{c.max_ffn_hidden()};
  for (const LayerSpec& l : c.layers) hidden_floats = std::max(hidden_floats, n * l.ffn.n_used * size_t{l.ffn.hidden});
  gate.resize(hidden_floats);
  up.resize(hidden_floats);
  if (c.n_experts > 1) {
    const bool scaled_router = std::any_of(c.layers.begin(), c.layers.end(), [](const LayerSpec& l) {
      return l.ffn.router_input == RouterInput::kScaledNorm;
    });
    if (scaled_router) router_in.resize(n * c.dim);
    router_logits.resize(n * c.n_experts);
    expert_ids.resize(n * c.n_experts_used);
    expert_weights.resize(n * c.n_experts_used);
    expert_in.resize(n * c.n_experts_used * c.dim);
    expert_out.resize(n * c.n_experts_used * c.dim);
  }
  size_t channels = 0, v_dim = 0, v_heads = 0;
  bool gated = false, shared = false;
  for (const LayerSpec& l : c.layers) {
    gated = gated || (l.mixer == Mixer::kAttention && l.attention.output_gate);
    shared = shared || l.ffn.has_shared();
    if (l.mixer != Mixer::kDeltaNet) continue;
    channels = std::max<size_t>(channels, l.deltanet.conv_channels());
    v_dim = std::max<size_t>(v_dim, l.deltanet.v_dim());
    v_heads = std::max<size_t>(v_heads, l.deltanet.n_v_heads);
  }
  if (gated) {
    q_and_gate.resize(n * 2 * c.q_dim());
    q_gate.resize(n * c.q_dim());
  }
  dn_qkv.resize(n * channels);
  dn_z.resize(n * v_dim);
  dn_beta.resize(n * v_heads);
  dn_alpha.resize(n * v_heads);
  dn_out.resize(n * v_dim);
  if (shared) shared_out.resize(n * c.dim);
  jobs.reserve(std::max<size_t>(3, 2 * size_t{c.n_experts}));
  if (c.per_layer_input_dim > 0) {
    per_layer_in.resize(n * c.n_layers * c.per_layer_input_dim);
    per_layer_tok.resize(c.n_layers * c.per_layer_input_dim);
    per_layer_gate.resize(n * c.per_layer_input_dim);
  }
}

void cpu_embed(const LlamaConfig& c, const LlamaWeights& w, const CpuModelVectors& vec, const int32_t* tokens,
               CpuActivations& a, ThreadPool* pool, MatmulFn matmul) {
  const size_t dim = c.dim, n = a.n_tokens;
  const float scale = c.embedding_scale;
  for (size_t t = 0; t < n; ++t) {
    float* x = &a.x[t * dim];
    dequantize_tensor_row(w.token_embd, static_cast<uint64_t>(tokens[t]), x);
    if (scale != 1.0f) {
      for (size_t i = 0; i < dim; ++i) x[i] *= scale;
    }
  }
  if (!w.per_layer_inputs) return;
  // Per-layer inputs (llama.cpp's project_per_layer_inputs): the scaled embedding projected and
  // scaled by 1/sqrt(dim), each layer's slice RMS-normed, plus the token's own rows times sqrt(P),
  // the sum times 1/sqrt(2).
  const PerLayerInputTables& tables = *w.per_layer_inputs;
  const size_t p = c.per_layer_input_dim, all = p * c.n_layers;
  const float proj_scale = 1.0f / std::sqrt(static_cast<float>(dim));
  const float token_scale = std::sqrt(static_cast<float>(p));
  const float sum_scale = 1.0f / std::sqrt(2.0f);
  matmul(tables.model_proj, a.x.data(), n, a.per_layer_in.data(), pool);
  float* token_rows = a.per_layer_tok.data();
  for (size_t t = 0; t < n; ++t) {
    float* in = &a.per_layer_in[t * all];
    for (size_t i = 0; i < all; ++i) in[i] *= proj_scale;
    for (size_t l = 0; l < c.n_layers; ++l) ref::rmsnorm(in + l * p, in + l * p, vec.per_layer_proj_norm.data(), p, c.norm_eps);
    dequantize_tensor_row(tables.token_embd, static_cast<uint64_t>(tokens[t]), token_rows);
    for (size_t i = 0; i < all; ++i) in[i] = (in[i] + token_rows[i] * token_scale) * sum_scale;
  }
}

namespace {

// attn_q's rows of a gated layer hold, per head, the query then its gate: a.q and a.q_gate get them.
void split_query_gate(size_t n, size_t n_heads, size_t head_dim, CpuActivations& a) {
  const size_t q_dim = n_heads * head_dim;
  for (size_t t = 0; t < n; ++t) {
    for (size_t h = 0; h < n_heads; ++h) {
      const float* src = &a.q_and_gate[t * 2 * q_dim + 2 * h * head_dim];
      std::copy_n(src, head_dim, &a.q[t * q_dim + h * head_dim]);
      std::copy_n(src + head_dim, head_dim, &a.q_gate[t * q_dim + h * head_dim]);
    }
  }
}

// The attention sublayer over the normed inputs a.xb into a.proj (before the residual add).
void attention_mixer(const LlamaConfig& c, const LayerWeights& layer, const CpuLayerVectors& lv, size_t l,
                     const int32_t* positions, CpuActivations& a, LayerKv& kv, ThreadPool* pool, MatmulFn matmul) {
  const size_t n = a.n_tokens;
  const LayerSpec& spec = c.layers[l];
  const size_t dim = c.dim;
  const size_t head_dim = spec.attention.head_dim;  // this layer's geometry (Gemma 4's layers differ)
  const size_t n_kv_heads = spec.attention.n_kv_heads;
  const size_t q_dim = c.n_heads * head_dim;
  const size_t kv_dim = spec.attention.kv_dim();

  // Q, K, V projections, in one dispatch. A KV-sharing layer (Gemma 4) has a query only; its keys
  // and values are another layer's.
  const bool own_kv = !spec.attention.shares_kv();
  a.jobs.clear();
  a.jobs.push_back(whole(layer.wq, a.xb.data(), n, spec.attention.output_gate ? a.q_and_gate.data() : a.q.data()));
  if (own_kv) a.jobs.push_back(whole(layer.wk, a.xb.data(), n, a.k.data()));
  if (own_kv && !spec.attention.value_from_key) a.jobs.push_back(whole(layer.wv, a.xb.data(), n, a.v.data()));
  run_jobs(a.jobs, pool, matmul);
  if (spec.attention.output_gate) split_query_gate(n, c.n_heads, head_dim, a);
  if (own_kv && spec.attention.value_from_key) {
    std::copy_n(a.k.data(), n * kv_dim, a.v.data());  // V is the K projection, before K's norm
  }
  for (size_t t = 0; t < n; ++t) {
    float* q = &a.q[t * q_dim];
    float* k = &a.k[t * kv_dim];
    float* v = &a.v[t * kv_dim];
    // Biases (qwen2, gpt-oss), per-head Q/K norms (qwen3, gemma3), then the layer's rope; K and V go
    // to the cache.
    if (layer.bq) ref::add_bias(q, lv.bq.data(), q_dim);
    if (layer.attn_q_norm) ref::rmsnorm_heads(q, lv.q_norm.data(), c.n_heads, head_dim, c.norm_eps);
    ref::rope(q, c.n_heads, head_dim, positions[t], lv.rope);
    if (!own_kv) continue;
    if (layer.bk) ref::add_bias(k, lv.bk.data(), kv_dim);
    if (layer.bv) ref::add_bias(v, lv.bv.data(), kv_dim);
    if (layer.attn_k_norm) ref::rmsnorm_heads(k, lv.k_norm.data(), n_kv_heads, head_dim, c.norm_eps);
    if (!lv.ones.empty()) ref::rmsnorm_heads(v, lv.ones.data(), n_kv_heads, head_dim, c.norm_eps);
    ref::rope(k, n_kv_heads, head_dim, positions[t], lv.rope);
    kv.store(t, k, v, n_kv_heads, head_dim);
  }
  // Attention of each token over the cached positions its window sees.
  ref::AttentionParams ap;
  ap.n_heads = c.n_heads;
  ap.n_kv_heads = n_kv_heads;
  ap.head_dim = head_dim;
  ap.scale = spec.attention.scale;
  ap.softcap = spec.attention.softcap;
  ap.sinks = lv.sinks.empty() ? nullptr : lv.sinks.data();
  ap.window = spec.attention.window;
  // A work item is one token's heads, or one KV head's query heads of a token when the step holds
  // few tokens (a decode step: at long contexts one token's attention is too much for one thread).
  const size_t items_per_token = pool != nullptr && n < 2 * static_cast<size_t>(pool->size()) ? n_kv_heads : 1;
  const size_t heads_per_item = c.n_heads / items_per_token;
  auto attend = [&](size_t item) {
    const size_t t = item / items_per_token;
    ref::AttentionParams heads = ap;
    heads.head_begin = item % items_per_token * heads_per_item;
    heads.head_end = heads.head_begin + heads_per_item;
    kv.attend(t, &a.q[t * q_dim], heads, &a.att[t * q_dim]);
  };
  if (pool != nullptr && n * items_per_token > 1) {
    pool->parallel_for(n * items_per_token, attend);
  } else {
    for (size_t item = 0; item < n * items_per_token; ++item) attend(item);
  }
  if (spec.attention.output_gate) {
    for (size_t i = 0; i < n * q_dim; ++i) a.att[i] *= ref::sigmoid(a.q_gate[i]);
  }
  // Output projection (and bias).
  matmul(layer.wo, a.att.data(), n, a.proj.data(), pool);
  add_bias_rows(a.proj.data(), lv.bo.empty() ? nullptr : lv.bo.data(), n, dim);
}

}  // namespace

void cpu_layer(const LlamaConfig& c, const LlamaWeights& w, const CpuModelVectors& vec, size_t l,
               const int32_t* positions, CpuActivations& a, LayerKv& kv, ThreadPool* pool, MatmulFn matmul) {
  const LayerWeights& layer = w.layers[l];
  const CpuLayerVectors& lv = vec.layers[l];
  const size_t n = a.n_tokens;
  const LayerSpec& spec = c.layers[l];
  const size_t dim = c.dim;

  // Mixer RMSNorm, the mixer (attention, or a Gated DeltaNet), post-norm, residual.
  for (size_t t = 0; t < n; ++t) ref::rmsnorm(&a.xb[t * dim], &a.x[t * dim], lv.attn_norm.data(), dim, c.norm_eps);
  if (spec.mixer == Mixer::kDeltaNet) {
    deltanet_mixer(c, spec.deltanet, *layer.deltanet, lv, a, kv, pool, matmul);
  } else {
    attention_mixer(c, layer, lv, l, positions, a, kv, pool, matmul);
  }
  add_residual(c, lv.post_attn_norm, a);

  // FFN RMSNorm, then the feed-forward block down(act(gate x, up x)): one dense block, or the
  // experts the router picks, and a shared expert beside them (where the block's norms are split,
  // the experts read their own norm of the residual and their sum is post-normed apart); the shared
  // output added after the routed sum; post-norm, residual.
  for (size_t t = 0; t < n; ++t) ref::rmsnorm(&a.xb[t * dim], &a.x[t * dim], lv.ffn_norm.data(), dim, c.norm_eps);
  if (layer.shared) shared_expert_ffn(c, spec.ffn, *layer.shared, lv, a, pool, matmul);
  if (spec.ffn.split_norms) {
    for (size_t t = 0; t < n; ++t) ref::rmsnorm(&a.xb[t * dim], &a.x[t * dim], lv.pre_norm_experts.data(), dim, c.norm_eps);
  }
  if (spec.ffn.routed()) {
    expert_ffn(c, spec.ffn, layer, lv, a, pool, matmul);
  } else {
    ffn_block(layer.w_gate, layer.w_up, layer.w_down, spec.ffn.activation, a.xb.data(), n, a.proj.data(), a, pool,
              matmul);
  }
  if (spec.ffn.split_norms) {
    for (size_t t = 0; t < n; ++t) ref::rmsnorm(&a.proj[t * dim], &a.proj[t * dim], lv.post_norm_experts.data(), dim, c.norm_eps);
  }
  if (layer.shared) {
    for (size_t i = 0; i < n * dim; ++i) a.proj[i] += a.shared_out[i];
  }
  add_residual(c, lv.post_ffn_norm, a);
  if (layer.per_layer_input) per_layer_input(c, *layer.per_layer_input, lv, l, a, pool, matmul);
  if (lv.output_scale != 1.0f) {
    for (size_t i = 0; i < n * dim; ++i) a.x[i] *= lv.output_scale;
  }
}

void cpu_logits(const LlamaConfig& c, const LlamaWeights& w, const CpuModelVectors& vec, const CpuActivations& a,
                const size_t* rows, size_t n_rows, float* logits, ThreadPool* pool, MatmulFn matmul) {
  const size_t dim = c.dim;
  std::vector<float> last(n_rows * dim);  // [n_rows, dim] normalized final states
  for (size_t o = 0; o < n_rows; ++o) {
    ref::rmsnorm(&last[o * dim], &a.x[rows[o] * dim], vec.output_norm.data(), dim, c.norm_eps);
  }
  matmul(w.output, last.data(), n_rows, logits, pool);
  if (c.final_softcap > 0.0f) ref::softcap(logits, n_rows * c.vocab_size, c.final_softcap);
}

}  // namespace vks
