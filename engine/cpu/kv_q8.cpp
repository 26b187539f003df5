#include "engine/cpu/kv_q8.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vks::cpu {

void quantize_kv_q8(const float* x, size_t n, int8_t* q, float* scales) {
  for (size_t b = 0; b < n / kKvQ8Block; ++b) {
    const float* v = x + b * kKvQ8Block;
    float amax = 0.0f;
    for (size_t i = 0; i < kKvQ8Block; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (size_t i = 0; i < kKvQ8Block; ++i) q[b * kKvQ8Block + i] = static_cast<int8_t>(std::lround(v[i] * id));
    scales[b] = d;
  }
}

void attention_paged_q8(float* out, const float* q, const int8_t* key_q, const float* key_scales,
                        const int8_t* value_q, const float* value_scales, std::span<const int32_t> block_table,
                        size_t block_size, size_t first, size_t n_ctx, size_t stride, const ref::AttentionParams& p) {
  const size_t head_dim = p.head_dim, blocks = head_dim / kKvQ8Block;
  const size_t group = p.n_heads / p.n_kv_heads;
  thread_local std::vector<float> scores;  // per thread: no allocation per call at long contexts
  thread_local std::vector<size_t> slots;
  if (scores.size() < n_ctx) scores.resize(n_ctx);
  if (slots.size() < n_ctx) slots.resize(n_ctx);
  for (size_t t = 0; t < n_ctx; ++t) {
    const size_t pos = first + t;
    slots[t] = static_cast<size_t>(block_table[pos / block_size]) * block_size + pos % block_size;
  }
  for (size_t h = p.head_begin; h < p.heads_end(); ++h) {
    const float* qh = q + h * head_dim;
    const size_t kv_offset = (h / group) * head_dim;
    // Scores: per block the int8 products, then times the block's scale.
    float max_score = p.sinks != nullptr ? p.sinks[h] : -INFINITY;
    for (size_t t = 0; t < n_ctx; ++t) {
      const size_t at = slots[t] * stride + kv_offset;
      const int8_t* k = key_q + at;
      const float* ks = key_scales + at / kKvQ8Block;
      float dot = 0.0f;
      for (size_t b = 0; b < blocks; ++b) {
        float sum = 0.0f;
        for (size_t i = 0; i < kKvQ8Block; ++i) sum += qh[b * kKvQ8Block + i] * static_cast<float>(k[b * kKvQ8Block + i]);
        dot += ks[b] * sum;
      }
      scores[t] = ref::attention_score(dot, p);
      max_score = std::max(max_score, scores[t]);
    }
    const float sum = ref::softmax_in_place(scores.data(), n_ctx, max_score, p.sinks != nullptr ? &p.sinks[h] : nullptr);
    // Probability-weighted values, a block's scale folded into its weight.
    float* oh = out + h * head_dim;
    std::fill(oh, oh + head_dim, 0.0f);
    for (size_t t = 0; t < n_ctx; ++t) {
      const float prob = scores[t] / sum;
      const size_t at = slots[t] * stride + kv_offset;
      const int8_t* v = value_q + at;
      const float* vs = value_scales + at / kKvQ8Block;
      for (size_t b = 0; b < blocks; ++b) {
        const float w = prob * vs[b];
        for (size_t i = 0; i < kKvQ8Block; ++i) oh[b * kKvQ8Block + i] += w * static_cast<float>(v[b * kKvQ8Block + i]);
      }
    }
  }
}

}  // namespace vks::cpu
