#include "engine/cpu/kv_quant.h"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "engine/cpu/attention_rows.h"
#include "engine/cpu/paged_kv_layout.h"

namespace vks::cpu {

namespace {

void quantize_q8_block(const float* v, uint8_t* q, float* scale) {
  float amax = 0.0f;
  for (size_t i = 0; i < kKvBlock; ++i) amax = std::max(amax, std::fabs(v[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (size_t i = 0; i < kKvBlock; ++i) q[i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(v[i] * id)));
  *scale = d;
}

// This file is built with -ffp-contract=off: v * id + 8.5 rounds twice, as the Vulkan write's
// `precise` sum does.
uint8_t q4_nibble(float v, float id) { return static_cast<uint8_t>(std::clamp(static_cast<int>(v * id + 8.5f), 0, 15)); }

void quantize_q4_block(const float* v, uint8_t* q, float* scale) {
  float amax = 0.0f, peak = 0.0f;
  for (size_t i = 0; i < kKvBlock; ++i) {
    if (amax < std::fabs(v[i])) {
      amax = std::fabs(v[i]);
      peak = v[i];
    }
  }
  const float d = peak * -0.125f;  // peak / -8, exactly
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (size_t i = 0; i < kKvBlock / 2; ++i) {
    q[i] = static_cast<uint8_t>(q4_nibble(v[2 * i], id) | q4_nibble(v[2 * i + 1], id) << 4);
  }
  *scale = d;
}

}  // namespace

void quantize_kv(KvType type, const float* x, size_t n, uint8_t* q, float* scales) {
  const size_t block_bytes = kv_plane_bytes(type, kKvBlock);
  for (size_t b = 0; b < n / kKvBlock; ++b) {
    if (type == KvType::kQ4_0) {
      quantize_q4_block(x + b * kKvBlock, q + b * block_bytes, scales + b);
    } else {
      quantize_q8_block(x + b * kKvBlock, q + b * block_bytes, scales + b);
    }
  }
}

namespace {

// One block of 32 decoded: the values the pool stands for.
template <KvType kType>
[[gnu::always_inline]] inline void decode_block(const uint8_t* q, float d, float* out) {
  if constexpr (kType == KvType::kQ4_0) {
    // The nibbles as int8 in value order first, then Q8_0's loop, which vectorizes: interleaving
    // the low and high nibbles' floats in one loop did not (vks_bench_cpu_attention, in cache: 1.48x
    // Q8_0's time that way, 1.27x this way).
    alignas(16) int8_t v[kKvBlock];
#if defined(__SSE2__)
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    const __m128i lo = _mm_and_si128(bytes, mask), hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
    _mm_store_si128(reinterpret_cast<__m128i*>(v), _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), eight));
    _mm_store_si128(reinterpret_cast<__m128i*>(v + 16), _mm_sub_epi8(_mm_unpackhi_epi8(lo, hi), eight));
#else
    for (size_t i = 0; i < kKvBlock / 2; ++i) {
      v[2 * i] = static_cast<int8_t>((q[i] & 15) - 8);
      v[2 * i + 1] = static_cast<int8_t>((q[i] >> 4) - 8);
    }
#endif
    for (size_t i = 0; i < kKvBlock; ++i) out[i] = static_cast<float>(v[i]) * d;
  } else {
    for (size_t i = 0; i < kKvBlock; ++i) out[i] = static_cast<float>(static_cast<int8_t>(q[i])) * d;
  }
}

// Quantized pools' rows decoded into floats as attend() asks for them (one row per KV-head group, so
// the heads of a group share a decode).
template <KvType kType>
struct QuantRows {
  QuantKvPools pools;
  const size_t* rows_at;  // [n_ctx] the value index of KV head 0's row at each visible position
  size_t head_step, head_dim;
  float* rows;  // [kValueRows][head_dim] the rows decoded last, in turn
  size_t next = 0;

  static constexpr size_t quant_at(size_t at) { return kv_plane_bytes(kType, at); }
  [[gnu::always_inline]] const float* decode(const uint8_t* q, const float* scales, size_t t, size_t kv_offset) {
    const size_t at = rows_at[t] + kv_offset;
    float* row = rows + (next++ % ref::rows::kValueRows) * head_dim;
    for (size_t b = 0; b < head_dim / kKvBlock; ++b) {
      decode_block<kType>(q + quant_at(at + b * kKvBlock), scales[at / kKvBlock + b], row + b * kKvBlock);
    }
    return row;
  }
  [[gnu::always_inline]] void prefetch(size_t t, size_t kv_offset) const {
    const size_t at = rows_at[t] + kv_offset;
    const size_t bytes = quant_at(head_dim), scale_bytes = head_dim / kKvBlock * sizeof(float);
    ref::rows::prefetch_bytes<3>(pools.key_q + quant_at(at), bytes);
    ref::rows::prefetch_bytes<3>(pools.key_scales + at / kKvBlock, scale_bytes);
    ref::rows::prefetch_bytes<2>(pools.value_q + quant_at(at), bytes);
    ref::rows::prefetch_bytes<2>(pools.value_scales + at / kKvBlock, scale_bytes);
  }
  [[gnu::always_inline]] const float* key(size_t t, size_t kv_offset) {
    return decode(pools.key_q, pools.key_scales, t, kv_offset);
  }
  [[gnu::always_inline]] const float* value(size_t t, size_t kv_offset) {
    return decode(pools.value_q, pools.value_scales, t, kv_offset);
  }
};

}  // namespace

void attention_paged_quant(float* out, const float* q, const QuantKvPools& pools, std::span<const int32_t> block_table,
                           size_t block_size, size_t first, size_t n_ctx, size_t stride, const ref::AttentionParams& p,
                           ref::AttendLevel level) {
  thread_local std::vector<size_t> rows_at;  // per thread: no allocation per call at long contexts
  thread_local std::vector<float> rows;
  if (rows_at.size() < n_ctx) rows_at.resize(n_ctx);
  if (rows.size() < ref::rows::kValueRows * p.head_dim) rows.resize(ref::rows::kValueRows * p.head_dim);
  const PagedKvLayout layout{block_size, stride, p.head_dim};
  for (size_t t = 0; t < n_ctx; ++t) rows_at[t] = layout.row(block_table, first + t, 0);
  if (pools.type == KvType::kQ4_0) {
    QuantRows<KvType::kQ4_0> reader{pools, rows_at.data(), layout.head_step(), p.head_dim, rows.data()};
    ref::rows::attend(out, q, n_ctx, p, reader, level);
  } else {
    QuantRows<KvType::kQ8_0> reader{pools, rows_at.data(), layout.head_step(), p.head_dim, rows.data()};
    ref::rows::attend(out, q, n_ctx, p, reader, level);
  }
}

}  // namespace vks::cpu
