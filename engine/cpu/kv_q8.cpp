#include "engine/cpu/kv_q8.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/attention_rows.h"

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

namespace {

// A Q8_0 pool's rows decoded into floats as attend() asks for them (one row per KV-head group, so
// the heads of a group share a decode): value * its block's scale, the values the pool stands for.
struct Q8Rows {
  const int8_t* key_q;
  const float* key_scales;
  const int8_t* value_q;
  const float* value_scales;
  const size_t* slots;  // [n_ctx] pool slot of each visible position
  size_t stride, head_dim;
  float* rows;  // [kValueRows][head_dim] the rows decoded last, in turn
  size_t next = 0;

  [[gnu::always_inline]] const float* decode(const int8_t* q, const float* scales, size_t t, size_t kv_offset) {
    const size_t at = slots[t] * stride + kv_offset;
    const int8_t* v = q + at;
    const float* s = scales + at / kKvQ8Block;
    float* row = rows + (next++ % ref::rows::kValueRows) * head_dim;
    for (size_t b = 0; b < head_dim / kKvQ8Block; ++b) {
      for (size_t i = 0; i < kKvQ8Block; ++i) row[b * kKvQ8Block + i] = static_cast<float>(v[b * kKvQ8Block + i]) * s[b];
    }
    return row;
  }
  [[gnu::always_inline]] void prefetch(size_t t, size_t kv_offset) const {
    const size_t at = slots[t] * stride + kv_offset;
    ref::rows::prefetch_bytes<3>(key_q + at, head_dim);
    ref::rows::prefetch_bytes<3>(key_scales + at / kKvQ8Block, head_dim / kKvQ8Block * sizeof(float));
    ref::rows::prefetch_bytes<2>(value_q + at, head_dim);
    ref::rows::prefetch_bytes<2>(value_scales + at / kKvQ8Block, head_dim / kKvQ8Block * sizeof(float));
  }
  [[gnu::always_inline]] const float* key(size_t t, size_t kv_offset) { return decode(key_q, key_scales, t, kv_offset); }
  [[gnu::always_inline]] const float* value(size_t t, size_t kv_offset) {
    return decode(value_q, value_scales, t, kv_offset);
  }
};

}  // namespace

void attention_paged_q8(float* out, const float* q, const int8_t* key_q, const float* key_scales,
                        const int8_t* value_q, const float* value_scales, std::span<const int32_t> block_table,
                        size_t block_size, size_t first, size_t n_ctx, size_t stride, const ref::AttentionParams& p,
                        ref::AttendLevel level) {
  thread_local std::vector<size_t> slots;  // per thread: no allocation per call at long contexts
  thread_local std::vector<float> rows;
  if (slots.size() < n_ctx) slots.resize(n_ctx);
  if (rows.size() < ref::rows::kValueRows * p.head_dim) rows.resize(ref::rows::kValueRows * p.head_dim);
  for (size_t t = 0; t < n_ctx; ++t) {
    const size_t pos = first + t;
    slots[t] = static_cast<size_t>(block_table[pos / block_size]) * block_size + pos % block_size;
  }
  Q8Rows reader{key_q, key_scales, value_q, value_scales, slots.data(), stride, p.head_dim, rows.data()};
  ref::rows::attend(out, q, n_ctx, p, reader, level);
}

}  // namespace vks::cpu
