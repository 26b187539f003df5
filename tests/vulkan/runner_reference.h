#pragma once
// Plain C++ references (double precision) for the attention-side kernels, in the exact layouts the
// shaders use (engine/vulkan/shaders/attn_params.h).
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "engine/gguf/ggml_type.h"

namespace vks::test {

// llama.cpp NORM rope on rows [n_tokens][row_stride], heads starting at col_offset.
// mode VKS_ROPE_MODE_NORM rotates (2i, 2i+1), NEOX (i, i + rope_dim/2); factors (may be empty)
// divide the frequencies as llama 3's rope_freqs.weight does.
inline void rope_ref(std::vector<float>& x, int n_tokens, int row_stride, int col_offset, int n_heads,
                     int head_dim, int rope_dim, const std::vector<int32_t>& positions, float freq_base,
                     float freq_scale, uint32_t mode = 0, const std::vector<float>& factors = {}) {
  for (int t = 0; t < n_tokens; ++t) {
    for (int h = 0; h < n_heads; ++h) {
      for (int i = 0; i < rope_dim / 2; ++i) {
        const double factor = factors.empty() ? 1.0 : factors[static_cast<size_t>(i)];
        const double theta =
            positions[static_cast<size_t>(t)] * std::pow(double{freq_base}, -2.0 * i / rope_dim) / factor * freq_scale;
        const size_t head = static_cast<size_t>(t * row_stride + col_offset + h * head_dim);
        const size_t a0 = head + static_cast<size_t>(mode == 1 ? i : 2 * i);
        const size_t a1 = a0 + static_cast<size_t>(mode == 1 ? rope_dim / 2 : 1);
        const double x0 = x[a0], x1 = x[a1];
        x[a0] = static_cast<float>(x0 * std::cos(theta) - x1 * std::sin(theta));
        x[a1] = static_cast<float>(x0 * std::sin(theta) + x1 * std::cos(theta));
      }
    }
  }
}

// F16 pools as halves: pool[slot * kv_dim + j]. A token whose slot is outside the pools is skipped,
// as the kernel skips it.
inline void kv_write_ref(const std::vector<float>& src, int n_tokens, int kv_dim, int row_stride, int k_offset,
                         int v_offset, const std::vector<int32_t>& slots, std::vector<uint16_t>& k_pool,
                         std::vector<uint16_t>& v_pool) {
  const int64_t n_slots = static_cast<int64_t>(k_pool.size() / static_cast<size_t>(kv_dim));
  for (int t = 0; t < n_tokens; ++t) {
    if (slots[static_cast<size_t>(t)] < 0 || slots[static_cast<size_t>(t)] >= n_slots) continue;
    const size_t slot = static_cast<size_t>(slots[static_cast<size_t>(t)]);
    for (int j = 0; j < kv_dim; ++j) {
      k_pool[slot * static_cast<size_t>(kv_dim) + static_cast<size_t>(j)] =
          fp32_to_fp16(src[static_cast<size_t>(t * row_stride + k_offset + j)]);
      v_pool[slot * static_cast<size_t>(kv_dim) + static_cast<size_t>(j)] =
          fp32_to_fp16(src[static_cast<size_t>(t * row_stride + v_offset + j)]);
    }
  }
}

struct AttnRefArgs {
  int n_tokens = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int q_stride = 0, q_offset = 0, out_stride = 0, block_size = 16, max_blocks_per_seq = 0;
  int window = 0;            // 0, or the last `window` keys only
  float softcap = 0.0f;      // 0, or scores c * tanh(s / c)
  std::vector<float> sinks;  // empty, or a logit per head in the denominator
};

// Causal paged attention: token t, head h over keys 0..positions[t] of its sequence (the last
// `window` of them), scores soft-capped, sinks in the denominator.
inline void attn_ref(const AttnRefArgs& a, const std::vector<float>& q, const std::vector<uint16_t>& k_pool,
                     const std::vector<uint16_t>& v_pool, const std::vector<int32_t>& positions,
                     const std::vector<int32_t>& token_seq, const std::vector<int32_t>& block_tables,
                     std::vector<float>& out) {
  const int kv_dim = a.n_kv_heads * a.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(a.head_dim));
  for (int t = 0; t < a.n_tokens; ++t) {
    const int n_keys = positions[static_cast<size_t>(t)] + 1;
    const int first = a.window > 0 && n_keys > a.window ? n_keys - a.window : 0;
    const int table = token_seq[static_cast<size_t>(t)] * a.max_blocks_per_seq;
    for (int h = 0; h < a.n_heads; ++h) {
      const int kvh = h / (a.n_heads / a.n_kv_heads);
      std::vector<double> scores(static_cast<size_t>(n_keys));
      std::vector<size_t> rows(static_cast<size_t>(n_keys));
      double mx = a.sinks.empty() ? -std::numeric_limits<double>::infinity() : a.sinks[static_cast<size_t>(h)];
      for (int k = 0; k < n_keys; ++k) {
        if (k < first) {
          scores[static_cast<size_t>(k)] = -std::numeric_limits<double>::infinity();
          continue;
        }
        const int slot = block_tables[static_cast<size_t>(table + k / a.block_size)] * a.block_size + k % a.block_size;
        const size_t row = static_cast<size_t>(slot * kv_dim + kvh * a.head_dim);
        rows[static_cast<size_t>(k)] = row;
        double dot = 0;
        for (int d = 0; d < a.head_dim; ++d) {
          dot += double{q[static_cast<size_t>(t * a.q_stride + a.q_offset + h * a.head_dim + d)]} *
                 fp16_to_fp32(k_pool[row + static_cast<size_t>(d)]);
        }
        double score = dot * scale;
        if (a.softcap > 0.0f) score = a.softcap * std::tanh(score / a.softcap);
        scores[static_cast<size_t>(k)] = score;
        mx = std::max(mx, score);
      }
      double sum = a.sinks.empty() ? 0.0 : std::exp(a.sinks[static_cast<size_t>(h)] - mx);
      for (double& s : scores) sum += (s = std::exp(s - mx));
      for (int d = 0; d < a.head_dim; ++d) {
        double acc = 0;
        for (int k = first; k < n_keys; ++k) {
          acc += scores[static_cast<size_t>(k)] * fp16_to_fp32(v_pool[rows[static_cast<size_t>(k)] + static_cast<size_t>(d)]);
        }
        out[static_cast<size_t>(t * a.out_stride + h * a.head_dim + d)] = static_cast<float>(acc / sum);
      }
    }
  }
}

// ||got - want|| / max(||want||, tiny): the kernels' accuracy measure.
inline double normalized_error(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double{got[i]} - want[i];
    num += d * d;
    den += double{want[i]} * want[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

}  // namespace vks::test
