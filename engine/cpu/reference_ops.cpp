#include "engine/cpu/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/cpu/attention_rows.h"
#include "engine/cpu/paged_kv_layout.h"

namespace vks::ref {


float dot(const float* a, const float* b, size_t n) { return rows::dot_lanes(a, b, n); }

void rmsnorm(float* out, const float* x, const float* weight, size_t n, float eps) {
  float sum_squares = 0.0f;
  for (size_t i = 0; i < n; ++i) sum_squares += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(sum_squares / static_cast<float>(n) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = weight[i] * (scale * x[i]);
}

void matmul(const TensorRef& w, const float* x, size_t n_tokens, float* y, ThreadPool* pool) {
  const size_t rows = w.rows;
  const size_t cols = w.cols;
  // Work items of a few rows each so the pool's per-item overhead stays small.
  constexpr size_t kRowsPerItem = 16;
  const size_t n_items = (rows + kRowsPerItem - 1) / kRowsPerItem;
  auto run_item = [&](size_t item) {
    std::vector<float> row(cols);  // the dequantized weight row
    const size_t end = std::min(rows, (item + 1) * kRowsPerItem);
    for (size_t r = item * kRowsPerItem; r < end; ++r) {
      dequantize_tensor_row(w, r, row.data());
      for (size_t t = 0; t < n_tokens; ++t) y[t * rows + r] = dot(row.data(), x + t * cols, cols);
    }
  };
  if (pool != nullptr) {
    pool->parallel_for(n_items, run_item);
  } else {
    for (size_t item = 0; item < n_items; ++item) run_item(item);
  }
}

void rope(float* vec, size_t n_heads, size_t head_dim, int32_t pos, const RopeParams& p) {
  const size_t n_pairs = std::min(p.rope_dim, head_dim) / 2;
  // NORM rotates (2i, 2i+1); NEOX rotates (i, i + rope_dim/2).
  const size_t stride = p.mode == RopeMode::kNeox ? 1 : 2;
  const size_t partner = p.mode == RopeMode::kNeox ? p.rope_dim / 2 : 1;
  for (size_t i = 0; i < n_pairs; ++i) {
    const float theta = static_cast<float>(pos) * rope_frequency(i, p) * rope_angle_scale(p);
    const float c = std::cos(theta) * (1.0f + p.mscale_extra);
    const float s = std::sin(theta) * (1.0f + p.mscale_extra);
    for (size_t h = 0; h < n_heads; ++h) {
      float* v0p = vec + h * head_dim + stride * i;
      float* v1p = v0p + partner;
      const float v0 = *v0p;
      const float v1 = *v1p;
      *v0p = v0 * c - v1 * s;
      *v1p = v0 * s + v1 * c;
    }
  }
}

float rope_frequency(size_t i, const RopeParams& p) {
  float freq = std::pow(p.freq_base, -static_cast<float>(2 * i) / static_cast<float>(p.rope_dim));
  if (p.freq_factors != nullptr) freq /= p.freq_factors[i];
  if (!p.yarn) return freq;
  // ggml's rope_yarn_ramp: 1 below yarn_low (extrapolate: keep the frequency), 0 above yarn_high.
  const float y = (static_cast<float>(i) - p.yarn_low) / std::max(0.001f, p.yarn_high - p.yarn_low);
  const float ramp = 1.0f - std::min(1.0f, std::max(0.0f, y));
  return freq * p.freq_scale * (1.0f - ramp) + freq * ramp;
}

RopeParams rope_params(const LlamaConfig& c, const AttentionSpec& layer, const float* freq_factors) {
  RopeParams p;
  p.rope_dim = layer.rope_dim != 0 ? layer.rope_dim : c.rope_dim;
  p.freq_base = layer.rope_base;
  p.freq_scale = layer.rope_scale;
  p.mode = c.rope_mode;
  p.freq_factors = layer.rope_factors ? freq_factors : nullptr;
  if (c.rope_scaling == "yarn") {
    // ggml_rope_yarn_corr_dims: the pairs that turn beta_fast and beta_slow times over the training
    // context bound the ramp.
    const float n_dims = static_cast<float>(p.rope_dim);
    const float ctx = static_cast<float>(c.yarn.original_context);
    auto corr_dim = [&](float rotations) {
      return n_dims * std::log(ctx / (rotations * 2.0f * 3.14159265358979323846f)) / (2.0f * std::log(layer.rope_base));
    };
    p.yarn = true;
    p.freq_scale = c.rope_freq_scale;
    p.yarn_low = std::max(0.0f, std::floor(corr_dim(c.yarn.beta_fast)));
    p.yarn_high = std::min(n_dims - 1.0f, std::ceil(corr_dim(c.yarn.beta_slow)));
    p.mscale_extra = 0.1f * std::log(1.0f / c.rope_freq_scale);
  }
  return p;
}

std::vector<float> rope_frequencies(const RopeParams& p) {
  std::vector<float> out(p.rope_dim / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = rope_frequency(i, p);
  return out;
}

void rope_norm(float* vec, size_t n_heads, size_t head_dim, size_t rope_dim, int32_t pos, float freq_base,
               float freq_scale) {
  RopeParams p;
  p.rope_dim = rope_dim;
  p.freq_base = freq_base;
  p.freq_scale = freq_scale;
  rope(vec, n_heads, head_dim, pos, p);
}

void rmsnorm_heads(float* vec, const float* weight, size_t n_heads, size_t head_dim, float eps) {
  for (size_t h = 0; h < n_heads; ++h) rmsnorm(vec + h * head_dim, vec + h * head_dim, weight, head_dim, eps);
}

void add_bias(float* x, const float* bias, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += bias[i];
}

namespace {

// Rows of a float cache read in place: position t's key and value rows of KV head 0 (kv_offset, a
// multiple of head_step, not yet added).
struct FloatRows {
  std::vector<const float*>& keys;
  std::vector<const float*>& values;
  size_t head_step;
  [[gnu::always_inline]] const float* key(size_t t, size_t kv_offset) const { return keys[t] + kv_offset; }
  [[gnu::always_inline]] const float* value(size_t t, size_t kv_offset) const { return values[t] + kv_offset; }
  // The value row waits in L2 for the pass over values that follows the scores.
  [[gnu::always_inline]] void prefetch(size_t t, size_t kv_offset) const {
    rows::prefetch_bytes<3>(keys[t] + kv_offset, head_dim * sizeof(float));
    rows::prefetch_bytes<2>(values[t] + kv_offset, head_dim * sizeof(float));
  }
  size_t head_dim;
};

// attention() over rows found by row(t) (KV head 0's key and value rows of visible position t; head
// h's are h * head_step values on): one loop order for contiguous and paged caches, so both give the
// same bits.
template <typename RowOf>
void attention_rows(float* out, const float* q, size_t n_ctx, const AttentionParams& p, AttendLevel level,
                    size_t head_step, RowOf row) {
  thread_local std::vector<const float*> keys, values;  // per thread: no allocation per call
  if (keys.size() < n_ctx) {
    keys.resize(n_ctx);
    values.resize(n_ctx);
  }
  for (size_t t = 0; t < n_ctx; ++t) std::tie(keys[t], values[t]) = row(t);
  FloatRows rows{keys, values, head_step, p.head_dim};
  rows::attend(out, q, n_ctx, p, rows, level);
}

}  // namespace

void attention(float* out, const float* q, const float* keys, const float* values, size_t n_ctx,
               const AttentionParams& p) {
  const size_t kv_dim = p.kv_stride != 0 ? p.kv_stride : p.n_kv_heads * p.head_dim;
  attention_rows(out, q, n_ctx, p, fastest_attend_level(), p.head_dim,
                 [&](size_t t) { return std::pair{keys + t * kv_dim, values + t * kv_dim}; });
}

void attention_paged(float* out, const float* q, const float* key_pool, const float* value_pool,
                     std::span<const int32_t> block_table, size_t block_size, size_t first, size_t n_ctx,
                     size_t stride, const AttentionParams& p, AttendLevel level) {
  const cpu::PagedKvLayout layout{block_size, stride, p.head_dim};
  attention_rows(out, q, n_ctx, p, level, layout.head_step(), [&](size_t t) {
    const size_t row = layout.row(block_table, first + t, 0);
    return std::pair{key_pool + row, value_pool + row};
  });
}

void attention(float* out, const float* q, const float* keys, const float* values, size_t n_ctx, size_t n_heads,
               size_t n_kv_heads, size_t head_dim) {
  AttentionParams p;
  p.n_heads = n_heads;
  p.n_kv_heads = n_kv_heads;
  p.head_dim = head_dim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  attention(out, q, keys, values, n_ctx, p);
}

namespace {

// The element-wise operations, out[i] = op(a[i], b[i]): over vectors of V, then element by element,
// with the same bits at every width (exp_lanes, tanh_lanes and the rest are element-wise). V is the
// widest register the level has (exp_lanes.h). Each operation's formula is written once, for a float
// and for a vector. The gated activations take (gate, up).
struct Silu {
  template <class V>
  [[gnu::always_inline]] V operator()(V g, V u) const {
    return g * sigmoid(g) * u;
  }
};
// silu alone (ref::silu passes x as both).
struct SiluAlone {
  template <class V>
  [[gnu::always_inline]] V operator()(V g, V) const {
    return g * sigmoid(g);
  }
};
// GELU's tanh approximation, 0.5 g (1 + tanh(z)), as g * sigmoid(2z): the same function without
// 1 + tanh(z)'s cancellation where z is negative (and one exp_lanes per element instead of glibc's
// tanhf and expm1f, 13.4% of a Gemma 3 1B-shape run's samples: perf, vks_bench_cpu_reference).
struct GeluTanh {
  template <class V>
  [[gnu::always_inline]] V operator()(V g, V u) const {
    constexpr float kTwoSqrt2OverPi = 1.59576912160573071176f;
    return g * sigmoid(kTwoSqrt2OverPi * g * (1.0f + 0.044715f * g * g)) * u;
  }
};
// gpt-oss's: g = min(gate, 7), u = clamp(up, -7, 7) (NaN passes through, as std::min and
// std::clamp), out = g * sigmoid(1.702 g) * (u + 1).
struct SwigluOai {
  template <class V>
  [[gnu::always_inline]] V operator()(V gate, V up) const {
    constexpr float kAlpha = 1.702f, kLimit = 7.0f;
    const V g = kLimit < gate ? V{} + kLimit : gate;
    const V u = up < -kLimit ? V{} - kLimit : (kLimit < up ? V{} + kLimit : up);
    return g * sigmoid(kAlpha * g) * (u + 1.0f);
  }
};
// cap * tanh(x / cap) (ref::softcap passes x as both).
struct Softcap {
  float cap;
  template <class V>
  [[gnu::always_inline]] V operator()(V x, V) const {
    return cap * tanh_lanes(x / cap);
  }
};

template <class V, class Op>
[[gnu::always_inline]] inline void map_lanes(const Op& op, float* out, const float* a, const float* b, size_t n) {
  constexpr size_t kWidth = sizeof(V) / sizeof(float);
  size_t i = 0;
  for (; i + kWidth <= n; i += kWidth) {
    V va, vb;
    std::memcpy(&va, a + i, sizeof va);
    std::memcpy(&vb, b + i, sizeof vb);
    const V o = op(va, vb);
    std::memcpy(out + i, &o, sizeof o);
  }
  for (; i < n; ++i) out[i] = op(a[i], b[i]);
}

template <class Op>
void map_baseline(const Op& op, float* out, const float* a, const float* b, size_t n) {
  map_lanes<rows::Lanes4>(op, out, a, b, n);
}
#if defined(__x86_64__)
template <class Op>
[[gnu::target("avx2")]] void map_avx2(const Op& op, float* out, const float* a, const float* b, size_t n) {
  map_lanes<rows::Lanes>(op, out, a, b, n);
}
template <class Op>
[[gnu::target("avx512f")]] void map_avx512(const Op& op, float* out, const float* a, const float* b, size_t n) {
  map_lanes<rows::Lanes16>(op, out, a, b, n);
}
#endif

// map_lanes at the CPU's widest level.
template <class Op>
void map(const Op& op, float* out, const float* a, const float* b, size_t n) {
#if defined(__x86_64__)
  switch (fastest_attend_level()) {
    case AttendLevel::kAvx512: return map_avx512(op, out, a, b, n);
    case AttendLevel::kAvx2: return map_avx2(op, out, a, b, n);
    case AttendLevel::kBaseline: break;
  }
#endif
  map_baseline(op, out, a, b, n);
}

}  // namespace

void swiglu(float* out, const float* gate, const float* up, size_t n) { map(Silu{}, out, gate, up, n); }
void silu(float* x, size_t n) { map(SiluAlone{}, x, x, x, n); }
void gelu_glu(float* out, const float* gate, const float* up, size_t n) { map(GeluTanh{}, out, gate, up, n); }
void swiglu_oai(float* out, const float* gate, const float* up, size_t n) { map(SwigluOai{}, out, gate, up, n); }

void ffn_activation(FfnActivation act, float* out, const float* gate, const float* up, size_t n) {
  switch (act) {
    case FfnActivation::kSilu: return swiglu(out, gate, up, n);
    case FfnActivation::kGeluTanh: return gelu_glu(out, gate, up, n);
    case FfnActivation::kSwigluOai: return swiglu_oai(out, gate, up, n);
  }
}

void softcap(float* x, size_t n, float cap) { map(Softcap{cap}, x, x, x, n); }

int32_t argmax(const float* x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

}  // namespace vks::ref
