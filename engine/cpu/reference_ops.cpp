#include "engine/cpu/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/common/thread_pool.h"

namespace vks::ref {

namespace {

constexpr size_t kLanes = 8;  // dot()'s partial sums; element i goes to lane i % 8

float combine_lanes(const float (&lane)[kLanes]) {
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

}  // namespace

float dot(const float* a, const float* b, size_t n) {
  float lane[kLanes] = {};
  const size_t body = n - n % kLanes;
  for (size_t i = 0; i < body; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) lane[j] += a[i + j] * b[i + j];
  }
  float sum = combine_lanes(lane);
  for (size_t i = body; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

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
    const float theta = static_cast<float>(pos) * rope_frequency(i, p) * p.freq_scale;
    const float c = std::cos(theta);
    const float s = std::sin(theta);
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
  return freq;
}

RopeParams rope_params(const LlamaConfig& c, const float* freq_factors) {
  RopeParams p;
  p.rope_dim = c.rope_dim;
  p.freq_base = c.rope_freq_base;
  p.freq_scale = c.rope_freq_scale;
  p.mode = c.rope_mode;
  p.freq_factors = freq_factors;
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

void attention(float* out, const float* q, const float* keys, const float* values, size_t n_ctx, size_t n_heads,
               size_t n_kv_heads, size_t head_dim) {
  const size_t kv_dim = n_kv_heads * head_dim;
  const size_t group = n_heads / n_kv_heads;  // query heads sharing one KV head
  const float sqrt_head_dim = std::sqrt(static_cast<float>(head_dim));
  std::vector<float> scores(n_ctx);
  for (size_t h = 0; h < n_heads; ++h) {
    const float* qh = q + h * head_dim;
    const size_t kv_offset = (h / group) * head_dim;
    // Scores of every cached position.
    float max_score = -INFINITY;
    for (size_t t = 0; t < n_ctx; ++t) {
      scores[t] = dot(qh, keys + t * kv_dim + kv_offset, head_dim) / sqrt_head_dim;
      max_score = std::max(max_score, scores[t]);
    }
    // Softmax.
    float sum = 0.0f;
    for (size_t t = 0; t < n_ctx; ++t) {
      scores[t] = std::exp(scores[t] - max_score);
      sum += scores[t];
    }
    // Probability-weighted sum of the values.
    float* oh = out + h * head_dim;
    std::fill(oh, oh + head_dim, 0.0f);
    for (size_t t = 0; t < n_ctx; ++t) {
      const float p = scores[t] / sum;
      const float* vt = values + t * kv_dim + kv_offset;
      for (size_t d = 0; d < head_dim; ++d) oh[d] += p * vt[d];
    }
  }
}

void swiglu(float* out, const float* gate, const float* up, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g * (1.0f / (1.0f + std::exp(-g))) * up[i];
  }
}

void gather_paged_rows(const float* pool, std::span<const int32_t> block_table, size_t block_size, size_t n_ctx,
                       size_t width, float* out) {
  for (size_t t = 0; t < n_ctx; ++t) {
    const size_t slot = static_cast<size_t>(block_table[t / block_size]) * block_size + t % block_size;
    std::memcpy(out + t * width, pool + slot * width, width * sizeof(float));
  }
}

int32_t argmax(const float* x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

}  // namespace vks::ref
