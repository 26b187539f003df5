#include "engine/cpu/cpu_deltanet.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/cpu/delta_rule.h"

namespace vks {
namespace {

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// x / max(|x|, eps) per head, as ggml_l2_norm.
void l2_normalize_heads(float* x, size_t n_heads, size_t dim, float eps) {
  for (size_t h = 0; h < n_heads; ++h) {
    float* v = x + h * dim;
    double sum = 0.0;
    for (size_t i = 0; i < dim; ++i) sum += double{v[i]} * v[i];
    const float scale = 1.0f / std::max(static_cast<float>(std::sqrt(sum)), eps);
    for (size_t i = 0; i < dim; ++i) v[i] *= scale;
  }
}

// Channels a conv slice holds: slices run in parallel, each over every token in order (the test
// fixtures' 256 channels are four).
constexpr size_t kConvSlice = 64;

// The causal depthwise conv of one token over `count` (<= kConvSlice) channels, in place: channel c
// of x becomes silu(sum_k w[c][k] * input[t - (kernel-1) + k][c]), x being input[t]; the state (its
// rows `stride` floats apart) then holds the last kernel-1 inputs, oldest first. Each channel's sum
// runs over k in order from 0, as written; the loops over channels are innermost so that they run
// in vector lanes, and the silu runs over the slice at once.
void conv_step(float* x, float* state, size_t stride, const float* w, size_t count, size_t kernel) {
  const size_t past = kernel - 1;
  float sum[kConvSlice];
  for (size_t c = 0; c < count; ++c) sum[c] = 0.0f;
  for (size_t k = 0; k < past; ++k) {
    const float* input = state + k * stride;
    for (size_t c = 0; c < count; ++c) sum[c] = sum[c] + w[c * kernel + k] * input[c];
  }
  for (size_t c = 0; c < count; ++c) sum[c] = sum[c] + w[c * kernel + past] * x[c];
  if (past > 0) {
    for (size_t k = 0; k + 1 < past; ++k) std::memcpy(state + k * stride, state + (k + 1) * stride, count * sizeof(float));
    std::memcpy(state + (past - 1) * stride, x, count * sizeof(float));
  }
  std::memcpy(x, sum, count * sizeof(float));
  ref::silu(x, count);
}

}  // namespace

void deltanet_mixer(const LlamaConfig& c, const DeltaNetSpec& d, const DeltaNetWeights& w, const CpuLayerVectors& lv,
                    CpuActivations& a, LayerKv& kv, ThreadPool* pool, MatmulFn matmul) {
  const size_t n = a.n_tokens, channels = d.conv_channels(), v_dim = d.v_dim(), n_heads = d.n_v_heads;
  const size_t hd = d.head_dim, groups = d.n_groups, qk_dim = d.qk_dim();
  matmul(w.qkv, a.xb.data(), n, a.dn_qkv.data(), pool);
  matmul(w.z, a.xb.data(), n, a.dn_z.data(), pool);
  matmul(w.beta, a.xb.data(), n, a.dn_beta.data(), pool);
  matmul(w.alpha, a.xb.data(), n, a.dn_alpha.data(), pool);
  // The conv runs every token in order (each token shifts its sequence's conv state), a slice of
  // channels per thread; then q and k are L2-normalized per head.
  auto conv_slice = [&](size_t slice) {
    const size_t c0 = slice * kConvSlice, count = std::min(kConvSlice, channels - c0);
    for (size_t t = 0; t < n; ++t) {
      conv_step(&a.dn_qkv[t * channels + c0], kv.recurrent_state(t).conv + c0, channels,
                lv.conv.data() + c0 * d.conv_kernel, count, d.conv_kernel);
    }
  };
  auto normalize = [&](size_t t) { l2_normalize_heads(&a.dn_qkv[t * channels], 2 * groups, hd, c.norm_eps); };
  const size_t slices = (channels + kConvSlice - 1) / kConvSlice;
  if (pool != nullptr) {
    pool->parallel_for(slices, conv_slice);
    pool->parallel_for(n, normalize);
  } else {
    for (size_t slice = 0; slice < slices; ++slice) conv_slice(slice);
    for (size_t t = 0; t < n; ++t) normalize(t);
  }
  // Value heads are independent: each runs its tokens in order, a sequence's consecutive tokens in
  // one call; head j reads q/k head j mod groups. Each (token, head)'s gate inputs become its decay
  // and beta in place.
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  auto run_head = [&](size_t j) {
    const size_t g = j % groups;
    for (size_t t = 0; t < n; ++t) {
      float& alpha = a.dn_alpha[t * n_heads + j];
      alpha = std::exp(softplus(alpha + lv.dt_bias[j]) * lv.ssm_a[j]);
      float& beta = a.dn_beta[t * n_heads + j];
      beta = ref::sigmoid(beta);
    }
    for (size_t t = 0; t < n;) {
      float* state = kv.recurrent_state(t).delta;
      size_t end = t + 1;
      while (end < n && kv.recurrent_state(end).delta == state) ++end;
      ref::DeltaRuleTokens x;
      x.q = &a.dn_qkv[t * channels + g * hd];
      x.k = x.q + qk_dim;
      x.v = &a.dn_qkv[t * channels + 2 * qk_dim + j * hd];
      x.qkv_stride = channels;
      x.decay = &a.dn_alpha[t * n_heads + j];
      x.beta = &a.dn_beta[t * n_heads + j];
      x.gate_stride = n_heads;
      x.o = &a.dn_out[t * v_dim + j * hd];
      x.o_stride = v_dim;
      x.n = end - t;
      ref::delta_rule(state + j * hd * hd, x, scale, hd);
      t = end;
    }
    // Gated RMSNorm: norm(o) * silu(z), which is SwiGLU with z as the gate and o as the up.
    for (size_t t = 0; t < n; ++t) {
      float* o = &a.dn_out[t * v_dim + j * hd];
      ref::rmsnorm(o, o, lv.ssm_norm.data(), hd, c.norm_eps);
      ref::swiglu(o, &a.dn_z[t * v_dim + j * hd], o, hd);
    }
  };
  if (pool != nullptr && n_heads > 1) {
    pool->parallel_for(n_heads, run_head);
  } else {
    for (size_t j = 0; j < n_heads; ++j) run_head(j);
  }
  matmul(w.out, a.dn_out.data(), n, a.proj.data(), pool);
}

}  // namespace vks
