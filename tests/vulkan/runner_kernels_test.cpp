// The attention-side kernels (rope_kv_f16, attn_f16) against plain C++ references on awkward sizes,
// plus the batch invariance of attention.
#include <gtest/gtest.h>

#include <bit>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>

#include "engine/common/error.h"
#include "engine/cpu/reference_ops.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/core/kernel.h"
#include "engine/vulkan/runner/attn_kernels.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_reference.h"

namespace vks::vk {
namespace {

using test::normalized_error;
using test::random_floats;

// Halves packed two per uint (element 2i low) <-> plain halves.
std::vector<uint32_t> pack_halves(const std::vector<uint16_t>& h) {
  std::vector<uint32_t> out(h.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = h[2 * i] | (uint32_t{h[2 * i + 1]} << 16);
  return out;
}
std::vector<uint16_t> unpack_halves(const std::vector<uint32_t>& p) {
  std::vector<uint16_t> out(p.size() * 2);
  for (size_t i = 0; i < p.size(); ++i) {
    out[2 * i] = static_cast<uint16_t>(p[i] & 0xffffu);
    out[2 * i + 1] = static_cast<uint16_t>(p[i] >> 16);
  }
  return out;
}

class RunnerKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    device_.emplace(Device::create());
    kernels_.emplace(*device_);
  }

  template <class T>
  Buffer make(const std::vector<T>& data) {
    const uint64_t bytes = std::max<uint64_t>(data.size() * sizeof(T), 4);
    Buffer b = device_->create_buffer(bytes);
    if (!data.empty()) device_->upload(b, 0, data.data(), data.size() * sizeof(T));
    return b;
  }
  template <class T>
  std::vector<T> read(const Buffer& b, size_t n) {
    std::vector<T> out(n);
    device_->download(b, 0, out.data(), n * sizeof(T));
    return out;
  }
  // n halves of a pool (stored two per uint).
  std::vector<uint16_t> read_halves(const Buffer& b, size_t n) { return unpack_halves(read<uint32_t>(b, n / 2)); }
  template <class Record>
  void run(Record record) {
    CommandBuffer cmd = device_->create_command_buffer();
    cmd.begin();
    cmd.barrier(Stage::kHost, Stage::kCompute);
    record(cmd);
    cmd.barrier(Stage::kCompute, Stage::kHost);
    cmd.end();
    device_->submit_and_wait(cmd);
  }

  // rope_kv_f16 over `rows`; absent pools and slots (no K/V heads) are one-word stand-ins.
  void rope_kv(Buffer& rows, const std::vector<int32_t>& positions, const std::vector<float>& freqs, Buffer* k_pool,
               Buffer* v_pool, const std::vector<int32_t>& slots, const gpu::RopeKvParams& p) {
    Buffer pb = make(positions), fb = make(freqs), sb = make(slots);
    Buffer stand_in = make(std::vector<uint32_t>(1));
    const RopeKvBindings b{rows.view(), pb.view(), fb.view(), (k_pool ? *k_pool : stand_in).view(),
                           (v_pool ? *v_pool : stand_in).view(), sb.view()};
    run([&](CommandBuffer& cmd) { record_rope_kv(cmd, *kernels_, b, p); });
  }

  std::optional<Device> device_;
  std::optional<KernelRegistry> kernels_;
};

// Parameters of a rope over n_heads Q heads at col_offset, with no K/V heads.
gpu::RopeKvParams rope_only(int n_tokens, int n_heads, int head_dim, int rope_dim, int row_stride, int col_offset,
                            float scale, uint32_t mode) {
  return gpu::RopeKvParams{static_cast<uint32_t>(n_tokens), static_cast<uint32_t>(n_heads), 0,
                           static_cast<uint32_t>(head_dim), static_cast<uint32_t>(rope_dim),
                           static_cast<uint32_t>(row_stride), static_cast<uint32_t>(col_offset), 0, 0, 0, scale, mode, 0.0f,
                           VKS_KV_F16, VKS_KV_F16, 0, 0};
}

struct RopeCase {
  int n_tokens, n_heads, head_dim, rope_dim, row_stride, col_offset, max_pos;
  float base, scale, tolerance;
  uint32_t mode = VKS_ROPE_MODE_NORM;
  bool freq_factors = false;
};

TEST_F(RunnerKernels, RopeMatchesReference) {
  const RopeCase cases[] = {
      {13, 7, 10, 10, 77, 3, 300, 10000.0f, 1.0f, 2e-5f},     // odd heads, 10-dim heads, padded rows
      {5, 3, 12, 8, 40, 2, 200, 500000.0f, 0.25f, 2e-5f},      // partial rotation, llama3 base, scaling
      {67, 36, 64, 64, 36 * 64 + 512, 0, 2047, 10000.0f, 1.0f, 2e-4f},  // tinyllama q+k, long positions
      {1, 12, 8, 8, 96, 0, 0, 10000.0f, 1.0f, 1e-7f},          // position 0 is the identity
      // NEOX (qwen2/qwen3): pairs (i, i + rope_dim/2); partial rotation, odd heads, padded rows.
      {9, 5, 12, 8, 70, 5, 1000, 1000000.0f, 1.0f, 2e-5f, VKS_ROPE_MODE_NEOX},
      // Llama 3 frequency factors (rope_freqs.weight), NORM and NEOX.
      {7, 6, 32, 32, 200, 4, 5000, 500000.0f, 1.0f, 2e-5f, VKS_ROPE_MODE_NORM, true},
      {6, 3, 16, 16, 52, 0, 700, 10000.0f, 0.5f, 2e-5f, VKS_ROPE_MODE_NEOX, true},
  };
  uint32_t seed = 1;
  for (const RopeCase& c : cases) {
    std::vector<float> x = random_floats(static_cast<size_t>(c.n_tokens * c.row_stride), seed++);
    std::vector<int32_t> pos(static_cast<size_t>(c.n_tokens));
    std::mt19937 rng(seed++);
    for (int32_t& p : pos) p = static_cast<int32_t>(rng() % static_cast<uint32_t>(c.max_pos + 1));
    std::vector<float> factors;
    if (c.freq_factors) {
      for (int i = 0; i < c.rope_dim / 2; ++i) factors.push_back(1.0f + 7.0f * float(i % 5) / 4.0f);
    }
    ref::RopeParams table_params;  // the runner's table of angles, as it builds it
    table_params.rope_dim = static_cast<size_t>(c.rope_dim);
    table_params.freq_base = c.base;
    table_params.freq_factors = factors.empty() ? nullptr : factors.data();
    Buffer xb = make(x);
    rope_kv(xb, pos, ref::rope_frequencies(table_params), nullptr, nullptr, {0},
            rope_only(c.n_tokens, c.n_heads, c.head_dim, c.rope_dim, c.row_stride, c.col_offset, c.scale, c.mode));
    std::vector<float> got = read<float>(xb, x.size());
    std::vector<float> want = x;
    test::rope_ref(want, c.n_tokens, c.row_stride, c.col_offset, c.n_heads, c.head_dim, c.rope_dim, pos, c.base, c.scale,
                   c.mode, factors);
    EXPECT_LT(normalized_error(got, want), c.tolerance)
        << "case n_heads=" << c.n_heads << " head_dim=" << c.head_dim << " mode=" << c.mode << " factors=" << c.freq_factors;
    // Elements outside the rotated dims are untouched.
    for (int t = 0; t < c.n_tokens; ++t) {
      for (int col = 0; col < c.row_stride; ++col) {
        const int rel = col - c.col_offset;
        const bool rotated = rel >= 0 && rel < c.n_heads * c.head_dim && rel % c.head_dim < c.rope_dim;
        const size_t at = static_cast<size_t>(t * c.row_stride + col);
        if (!rotated) {
          ASSERT_EQ(got[at], x[at]) << "token " << t << " col " << col;
        }
      }
    }
  }
}

// Against the CPU backend's own rope (ref::rope), which computes the same float angle: only the
// sine and cosine may differ, so the tolerance is tight at any position. Positions run to a
// 128k context, where an angle of ~1e5 radians must still be reduced exactly (NVIDIA's sin/cos lost
// precision on large angles before the kernel reduced them itself).
TEST_F(RunnerKernels, RopeMatchesTheCpuBackendAtLongPositions) {
  const int n_tokens = 48, n_heads = 6, head_dim = 64, rope_dim = 64, row_stride = n_heads * head_dim;
  for (const float base : {10000.0f, 500000.0f}) {
    for (const uint32_t mode : {uint32_t{VKS_ROPE_MODE_NORM}, uint32_t{VKS_ROPE_MODE_NEOX}}) {
      std::vector<float> x = random_floats(static_cast<size_t>(n_tokens * row_stride), 11);
      std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
      std::mt19937 rng(5);
      for (size_t t = 0; t < pos.size(); ++t) pos[t] = t < 2 ? static_cast<int32_t>(131071 - t) : static_cast<int32_t>(rng() % 131072);
      ref::RopeParams rp;
      rp.rope_dim = rope_dim;
      rp.freq_base = base;
      rp.freq_scale = 1.0f;
      rp.mode = mode == VKS_ROPE_MODE_NEOX ? RopeMode::kNeox : RopeMode::kNorm;
      Buffer xb = make(x);
      rope_kv(xb, pos, ref::rope_frequencies(rp), nullptr, nullptr, {0},
              rope_only(n_tokens, n_heads, head_dim, rope_dim, row_stride, 0, 1.0f, mode));
      const std::vector<float> got = read<float>(xb, x.size());
      std::vector<float> want = x;
      for (int t = 0; t < n_tokens; ++t) {
        ref::rope(want.data() + static_cast<size_t>(t * row_stride), n_heads, head_dim, pos[static_cast<size_t>(t)], rp);
      }
      EXPECT_LT(normalized_error(got, want), 2e-6) << "base " << base << " mode " << mode;
    }
  }
}

// No rotation (rope_dim 0): K and V rows stored as halves at each token's slot, exactly.
TEST_F(RunnerKernels, KvWriteMatchesReference) {
  const int n_tokens = 11, n_kv_heads = 3, head_dim = 10, kv_dim = n_kv_heads * head_dim, row_stride = 83;
  const int k_offset = 7, v_offset = 41, n_slots = 48;
  std::vector<float> src = random_floats(static_cast<size_t>(n_tokens * row_stride), 7, -3.0f, 3.0f);
  std::vector<int32_t> slots(n_slots);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), std::mt19937(3));
  slots.resize(n_tokens);
  slots[4] = n_slots + 5;  // out of range: must be skipped, never written

  std::vector<uint16_t> k_want(static_cast<size_t>(n_slots * kv_dim), 0x1234), v_want = k_want;
  Buffer srcb = make(src), kb = make(pack_halves(k_want)), vb = make(pack_halves(v_want));
  const gpu::RopeKvParams p{n_tokens, 0, n_kv_heads, head_dim, 0, row_stride, 0, k_offset, v_offset, n_slots, 1.0f,
                            VKS_ROPE_MODE_NORM, 0.0f, VKS_KV_F16, VKS_KV_F16, 0, 0};
  rope_kv(srcb, std::vector<int32_t>(n_tokens, 0), {0.0f}, &kb, &vb, slots, p);

  test::kv_write_ref(src, n_tokens, kv_dim, row_stride, k_offset, v_offset, slots, k_want, v_want);
  const std::vector<uint16_t> k_got = read_halves(kb, k_want.size()), v_got = read_halves(vb, v_want.size());
  for (size_t i = 0; i < k_want.size(); ++i) {
    ASSERT_EQ(k_got[i], k_want[i]) << "K half " << i;
    ASSERT_EQ(v_got[i], v_want[i]) << "V half " << i;
  }
  EXPECT_EQ(read<float>(srcb, src.size()), src) << "the rows are only read";
}

// A quantized pool's words for n_slots rows of kv_dim values: quants, then one f32 scale a block.
uint32_t quant_words(uint32_t type, uint32_t values) { return values / (type == VKS_KV_Q4_0 ? 8 : 4) + values / 32; }

// Value `at` of a pool as attn_params.h lays it out (scales at uint scales_at), and its block's scale.
float pool_value(const std::vector<uint32_t>& w, uint32_t type, uint32_t scales_at, size_t at, float* scale) {
  if (type == VKS_KV_F16) return fp16_to_fp32(static_cast<uint16_t>(w[at / 2] >> (16 * (at % 2))));
  *scale = std::bit_cast<float>(w[scales_at + at / 32]);
  if (type == VKS_KV_Q4_0) return static_cast<float>(static_cast<int>((w[at / 8] >> (4 * (at % 8))) & 15u) - 8) * *scale;
  return static_cast<float>(static_cast<int8_t>(w[at / 4] >> (8 * (at % 4)))) * *scale;
}

// Quantized pools as rope_kv_f16 writes them (attn_params.h), against the values written (no rotation
// here: position 0), for K and V of every type pair the runner makes, mixed ones included (each pool
// with its own scale plane):
//  - Q8_0: each block's scale max|v| / 127, every value within half a step;
//  - Q4_0: the scale the block's value of largest magnitude / -8, exactly, that value decoding to
//    itself, the others within half a step up to +7 steps (the far side of that value stops there);
//  - F16: the half of each value.
// An all-zero block, a block whose largest magnitude is positive, an invalid slot that is skipped.
TEST_F(RunnerKernels, KvWriteQuantizesBlocks) {
  const int n_tokens = 5, n_kv_heads = 2, head_dim = 32, kv_dim = n_kv_heads * head_dim, row_stride = 140;
  const int k_offset = 4, v_offset = 70, n_slots = 12;
  std::vector<float> src = random_floats(static_cast<size_t>(n_tokens * row_stride), 17, -3.0f, 3.0f);
  for (int i = 0; i < 32; ++i) src[static_cast<size_t>(2 * row_stride + v_offset + 32 + i)] = 0.0f;  // an all-zero block
  src[static_cast<size_t>(k_offset + 40)] = 3.5f;   // token 0's second K block peaks positive
  src[static_cast<size_t>(k_offset + 41)] = -3.5f;  // and the equal negative comes later
  const std::vector<int32_t> slots{7, 2, 11, n_slots + 1, 0};
  const uint32_t fill = 0xdeadbeef;  // what an untouched word keeps
  const uint32_t values = n_slots * kv_dim;
  for (const auto& [k_type, v_type] :
       {std::pair{uint32_t{VKS_KV_Q8_0}, uint32_t{VKS_KV_F16}}, std::pair{uint32_t{VKS_KV_Q8_0}, uint32_t{VKS_KV_Q8_0}},
        std::pair{uint32_t{VKS_KV_Q4_0}, uint32_t{VKS_KV_Q4_0}}, std::pair{uint32_t{VKS_KV_Q8_0}, uint32_t{VKS_KV_Q4_0}},
        std::pair{uint32_t{VKS_KV_F16}, uint32_t{VKS_KV_Q4_0}}}) {
    const uint32_t k_words_n = k_type == VKS_KV_F16 ? values / 2 : quant_words(k_type, values);
    const uint32_t v_words_n = v_type == VKS_KV_F16 ? values / 2 : quant_words(v_type, values);
    const uint32_t k_scales_at = k_words_n - values / 32, v_scales_at = v_words_n - values / 32;
    Buffer srcb = make(src), kb = make(std::vector<uint32_t>(k_words_n, fill)), vb = make(std::vector<uint32_t>(v_words_n, fill));
    const gpu::RopeKvParams p{n_tokens, 0, n_kv_heads, head_dim, 0, row_stride, 0, k_offset, v_offset, n_slots,
                              1.0f, VKS_ROPE_MODE_NORM, 0.0f, k_type, v_type, k_scales_at, v_scales_at};
    rope_kv(srcb, std::vector<int32_t>(n_tokens, 0), {0.0f}, &kb, &vb, slots, p);
    const std::vector<uint32_t> k_words = read<uint32_t>(kb, k_words_n), v_words = read<uint32_t>(vb, v_words_n);
    const std::string types = "K " + std::to_string(k_type) + " V " + std::to_string(v_type);
    for (int t = 0; t < n_tokens; ++t) {
      const int slot = slots[static_cast<size_t>(t)];
      if (slot >= n_slots) continue;
      for (int col = 0; col < kv_dim; col += 32) {
        for (const bool is_k : {true, false}) {
          const uint32_t type = is_k ? k_type : v_type;
          const std::vector<uint32_t>& words = is_k ? k_words : v_words;
          const float* v = &src[static_cast<size_t>(t * row_stride + (is_k ? k_offset : v_offset) + col)];
          float amax = 0.0f, peak = 0.0f;  // llama.cpp's scan: the first of equal magnitudes
          for (int i = 0; i < 32; ++i) {
            if (amax < std::fabs(v[i])) {
              amax = std::fabs(v[i]);
              peak = v[i];
            }
          }
          const std::string where = types + (is_k ? ", K" : ", V") + " token " + std::to_string(t) + " col " + std::to_string(col);
          for (int i = 0; i < 32; ++i) {
            float scale = 0.0f;
            const float got = pool_value(words, type, is_k ? k_scales_at : v_scales_at,
                                         static_cast<size_t>(slot * kv_dim + col + i), &scale);
            if (type == VKS_KV_F16) {
              ASSERT_EQ(got, fp16_to_fp32(fp32_to_fp16(v[i]))) << where << " + " << i;
              continue;
            }
            float bound = 0.5f * std::fabs(scale);
            if (type == VKS_KV_Q8_0) {
              ASSERT_NEAR(scale, amax / 127.0f, 1e-6f * amax) << where;
            } else {
              ASSERT_EQ(scale, peak * -0.125f) << where;
              if (v[i] == peak && amax > 0.0f) {
                ASSERT_EQ(got, peak) << where << ": the peak decodes exactly";
              }
              const float steps = scale != 0.0f ? v[i] / scale : 0.0f;
              if (steps > 7.5f) bound = (steps - 7.0f) * std::fabs(scale);
            }
            // Rounded to the nearest step: within half a step (and exact zeros stay zero).
            ASSERT_LE(std::fabs(got - v[i]), bound * 1.0001f + 1e-7f) << where << " + " << i << ": " << got << " vs " << v[i];
          }
        }
      }
    }
    // The skipped slot's quants are untouched (its words hold whole blocks of one slot).
    for (const auto& [type, words] : {std::pair{k_type, &k_words}, std::pair{v_type, &v_words}}) {
      const uint32_t per_slot = type == VKS_KV_F16 ? kv_dim / 2 : kv_dim / (type == VKS_KV_Q4_0 ? 8 : 4);
      for (uint32_t w = 0; w < per_slot; ++w) EXPECT_EQ((*words)[3 * per_slot + w], fill) << types;
    }
  }
}

// The whole of one layer's use: Q rotated in place, K rotated into the K pool, V into the V pool,
// against rope_ref then kv_write_ref. GQA heads, partial rotation, padded rows, an invalid slot.
TEST_F(RunnerKernels, RopeKvMatchesRopeThenKvWrite) {
  const int n_tokens = 9, n_q = 6, n_kv = 2, head_dim = 12, rope_dim = 8, n_slots = 32;
  const int q_offset = 3, k_offset = q_offset + n_q * head_dim, v_offset = k_offset + n_kv * head_dim;
  const int row_stride = v_offset + n_kv * head_dim + 5, kv_dim = n_kv * head_dim;
  for (const uint32_t mode : {uint32_t{VKS_ROPE_MODE_NORM}, uint32_t{VKS_ROPE_MODE_NEOX}}) {
    const std::vector<float> rows = random_floats(static_cast<size_t>(n_tokens * row_stride), 21 + mode);
    std::vector<int32_t> pos(n_tokens), slots(n_tokens);
    for (int t = 0; t < n_tokens; ++t) {
      pos[static_cast<size_t>(t)] = 37 * t + 5;
      slots[static_cast<size_t>(t)] = (7 * t + 3) % n_slots;
    }
    slots[6] = -1;  // skipped: the pools keep their fill there
    ref::RopeParams rp;
    rp.rope_dim = rope_dim;
    rp.freq_base = 10000.0f;
    std::vector<uint16_t> pool_fill(static_cast<size_t>(n_slots * kv_dim), 0x3c00);  // 1.0
    Buffer rb = make(rows), kb = make(pack_halves(pool_fill)), vb = make(pack_halves(pool_fill));
    rope_kv(rb, pos, ref::rope_frequencies(rp), &kb, &vb, slots,
            gpu::RopeKvParams{n_tokens, n_q, n_kv, head_dim, rope_dim, row_stride, q_offset, k_offset, v_offset,
                              n_slots, 1.0f, mode, 0.0f, VKS_KV_F16, VKS_KV_F16, 0, 0});

    // Rows: Q rotated, everything else (K, V, padding before and after) as it was.
    std::vector<float> want_rows = rows;
    test::rope_ref(want_rows, n_tokens, row_stride, q_offset, n_q, head_dim, rope_dim, pos, 10000.0f, 1.0f, mode);
    const std::vector<float> got_rows = read<float>(rb, rows.size());
    EXPECT_LT(normalized_error(got_rows, want_rows), 2e-5) << "mode " << mode;
    for (int t = 0; t < n_tokens; ++t) {
      for (int col = 0; col < row_stride; ++col) {
        if (col >= q_offset && col < k_offset) continue;
        const size_t at = static_cast<size_t>(t * row_stride + col);
        ASSERT_EQ(got_rows[at], rows[at]) << "token " << t << " col " << col;
      }
    }
    // Pools: K from the rotated rows (halves within rounding of the float rotation), V exact.
    std::vector<float> rotated_k = rows;
    test::rope_ref(rotated_k, n_tokens, row_stride, k_offset, n_kv, head_dim, rope_dim, pos, 10000.0f, 1.0f, mode);
    std::vector<uint16_t> k_want = pool_fill, v_want = pool_fill;
    test::kv_write_ref(rotated_k, n_tokens, kv_dim, row_stride, k_offset, v_offset, slots, k_want, v_want);
    const std::vector<uint16_t> k_got = read_halves(kb, k_want.size()), v_got = read_halves(vb, v_want.size());
    std::vector<float> k_got_f, k_want_f;
    for (size_t i = 0; i < k_want.size(); ++i) {
      k_got_f.push_back(fp16_to_fp32(k_got[i]));
      k_want_f.push_back(fp16_to_fp32(k_want[i]));
      ASSERT_EQ(v_got[i], v_want[i]) << "V half " << i;
    }
    EXPECT_LT(normalized_error(k_got_f, k_want_f), 1e-3) << "mode " << mode;  // half rounding of either side
    for (int s = 0; s < n_slots; ++s) {
      const bool written = std::find(slots.begin(), slots.end(), s) != slots.end();
      if (written) continue;
      for (int j = 0; j < kv_dim; ++j) {
        ASSERT_EQ(k_got[static_cast<size_t>(s * kv_dim + j)], 0x3c00) << "slot " << s << " was written";
      }
    }
  }
}

struct SeqSpec {
  int n_past, n_tokens;
};

struct AttnCase {
  int n_heads, n_kv_heads, head_dim, block_size;
  std::vector<SeqSpec> seqs;
  // Attention variants (LayerSpec::attention): a sliding window, soft-capped scores, sink logits.
  uint32_t window = 0;
  float softcap = 0.0f;
  bool sinks = false;
  uint32_t split_keys = VKS_ATTN_SPLIT_KEYS;  // the lanes kernel's keys per split (the rows kernel has none)
};

// Runs attention over `seqs` (pools pre-filled with random keys for every slot) and returns
// out rows [n_tokens][n_heads*head_dim]; compares with the reference when `check`.
class AttnRun {
 public:
  AttnRun(const AttnCase& c, uint32_t seed) : c_(c) {
    const int max_len = std::max_element(c.seqs.begin(), c.seqs.end(), [](auto& a, auto& b) {
                          return a.n_past + a.n_tokens < b.n_past + b.n_tokens;
                        })->n_past + 64;
    max_blocks_ = (max_len + c.block_size - 1) / c.block_size;
    n_blocks_ = max_blocks_ * static_cast<int>(c.seqs.size()) + 3;
    kv_dim_ = c.n_kv_heads * c.head_dim;
    std::mt19937 rng(seed);
    std::vector<int32_t> blocks(static_cast<size_t>(n_blocks_));
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (size_t s = 0; s < c.seqs.size(); ++s) {
      tables_.emplace_back(blocks.begin() + static_cast<std::ptrdiff_t>(s) * max_blocks_,
                           blocks.begin() + static_cast<std::ptrdiff_t>(s + 1) * max_blocks_);
    }
    const std::vector<float> kf = random_floats(static_cast<size_t>(n_blocks_ * c.block_size * kv_dim_), seed + 1, -2, 2);
    const std::vector<float> vf = random_floats(kf.size(), seed + 2);
    for (float f : kf) k_.push_back(fp32_to_fp16(f));
    for (float f : vf) v_.push_back(fp32_to_fp16(f));
    q_stride_ = (c.n_heads + 2 * c.n_kv_heads) * c.head_dim + 3;
    int total = 0;
    for (const SeqSpec& s : c.seqs) total += s.n_tokens;
    q_all_ = random_floats(static_cast<size_t>(total * q_stride_), seed + 3, -2, 2);
    if (c.sinks) sinks_ = random_floats(static_cast<size_t>(c.n_heads), seed + 4, -3, 3);
  }

  // Tokens of the sequences in `which`, in that order, as one batch.
  struct Batch {
    std::vector<float> q;
    std::vector<int32_t> positions, token_seq, block_tables;
  };
  Batch batch(const std::vector<size_t>& which) const {
    Batch b;
    for (size_t k = 0; k < which.size(); ++k) {
      const size_t s = which[k];
      int first = 0;
      for (size_t j = 0; j < s; ++j) first += c_.seqs[j].n_tokens;
      for (int i = 0; i < c_.seqs[s].n_tokens; ++i) {
        b.q.insert(b.q.end(), q_all_.begin() + (first + i) * q_stride_, q_all_.begin() + (first + i + 1) * q_stride_);
        b.positions.push_back(c_.seqs[s].n_past + i);
        b.token_seq.push_back(static_cast<int32_t>(k));
      }
      b.block_tables.insert(b.block_tables.end(), tables_[s].begin(), tables_[s].end());
    }
    return b;
  }

  gpu::AttnParams params(uint32_t n_tokens) const {
    gpu::AttnParams p{};
    p.n_tokens = n_tokens;
    p.n_heads = static_cast<uint32_t>(c_.n_heads);
    p.n_kv_heads = static_cast<uint32_t>(c_.n_kv_heads);
    p.head_dim = static_cast<uint32_t>(c_.head_dim);
    p.q_stride = static_cast<uint32_t>(q_stride_);
    p.q_offset = 1;
    p.out_stride = static_cast<uint32_t>(c_.n_heads * c_.head_dim);
    p.block_size = static_cast<uint32_t>(c_.block_size);
    p.max_blocks_per_seq = static_cast<uint32_t>(max_blocks_);
    p.n_slots = static_cast<uint32_t>(n_blocks_ * c_.block_size);
    p.scale = 1.0f / std::sqrt(static_cast<float>(c_.head_dim));
    p.window = c_.window;
    p.softcap = c_.softcap;
    p.has_sinks = c_.sinks ? 1u : 0u;
    p.split_keys = c_.split_keys;
    return p;
  }
  test::AttnRefArgs ref_args(int n_tokens) const {
    const gpu::AttnParams p = params(static_cast<uint32_t>(n_tokens));
    test::AttnRefArgs a{n_tokens, c_.n_heads, c_.n_kv_heads, c_.head_dim, static_cast<int>(p.q_stride),
                        1, static_cast<int>(p.out_stride), c_.block_size, max_blocks_, 0, 0.0f, {}};
    a.window = static_cast<int>(c_.window);
    a.softcap = c_.softcap;
    a.sinks = sinks_;
    return a;
  }

  const AttnCase& c_;
  int max_blocks_ = 0, n_blocks_ = 0, kv_dim_ = 0, q_stride_ = 0;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<uint16_t> k_, v_;
  std::vector<float> q_all_;
  std::vector<float> sinks_;  // [n_heads] where the case has sinks
};

// Both kernels (attn_f16 for CPU devices, attn_lanes_f16 for GPUs) on every case they can reach here.
class RunnerAttention : public RunnerKernels, public ::testing::WithParamInterface<MatmulFamily> {};

TEST_P(RunnerAttention, MatchesReferenceAndIsBatchInvariant) {
  const MatmulFamily family = GetParam();
  std::vector<AttnCase> cases = {
      // stories260K shape: 8 heads, 4 kv heads, head_dim 8; decodes crossing the 64-key tile edge.
      {8, 4, 8, 16, {{0, 5}, {63, 1}, {64, 1}, {130, 9}, {17, 1}}},
      // awkward: head_dim 10, GQA 3:1, block size 7, prefill chunk crossing tiles.
      {6, 2, 10, 7, {{0, 1}, {40, 33}, {100, 1}, {3, 2}}},
      // K/V are fetched 4 pairs a texel when head_dim / 2 is a multiple of 4, else pair by pair:
      // head_dim 10 above reads one pair a step, head_dim 12 two.
      {4, 2, 12, 16, {{0, 3}, {50, 1}, {33, 2}}},
      // TinyLlama-like heads; head_dim 256 (the maximum).
      {8, 1, 64, 16, {{200, 1}, {0, 70}, {5, 1}}},
      {2, 2, 256, 16, {{90, 3}, {0, 1}}},
      // A decode batch whose rows end in different splits of VKS_ATTN_SPLIT_KEYS (128): 301 keys (3),
      // 130 (2, one key into the second), 128 (exactly 1), 6; the lanes kernel runs its splits in
      // parallel here, the shorter rows' extra workgroups exit at once.
      {4, 2, 64, 16, {{300, 1}, {129, 1}, {127, 1}, {5, 1}}},
      // The same with heads of 10 and 12 (pairs of halves read one and two a step, records of 12
      // and 14 floats).
      {6, 2, 10, 7, {{200, 1}, {20, 2}}},
      {4, 2, 12, 16, {{140, 3}}},
      // lavapipe stops an invocation's loops after 65,535 iterations in all (nested ones counted):
      // the old kernel lost keys past ~960 at head_dim 64 and ~250 at head_dim 256. A decode at key
      // 70,000 and a prefill chunk crossing key 65,535; long rows at head_dim 64 and 256.
      {1, 1, 8, 16, {{70000, 1}, {65530, 9}}},
      {4, 2, 64, 16, {{2100, 1}, {1000, 20}}},
      {1, 1, 256, 16, {{600, 1}}},
      // The budget's edge: the last key attention_max_keys() promises (the runner caps the context
      // there on CPU devices) is reached, so the formula holds on the device, not only on paper.
      {1, 1, 64, 16, {{static_cast<int>(attention_max_keys(64, family, VKS_ATTN_SPLIT_KEYS)) - 1, 1}}},
      {1, 1, 256, 16, {{static_cast<int>(attention_max_keys(256, family, VKS_ATTN_SPLIT_KEYS)) - 1, 1}}},
      // Variants: windows shorter and longer than a chunk/split, not a multiple of the block, with
      // soft-capping and sinks; prefill chunks crossing the window's edge.
      {4, 2, 32, 16, {{0, 12}, {30, 1}, {200, 9}, {5, 1}}, 8, 5.0f, true},
      {8, 4, 64, 16, {{300, 1}, {140, 20}, {0, 3}}, 130, 0.0f, false},
      {4, 4, 64, 7, {{1000, 1}, {600, 4}}, 257, 50.0f, true},
      // Other split sizes (a GPU may take one, attention_split_keys_for): the decode batch above in
      // splits of 64 (5 for the longest row), 256 (2) and 512 (1: no parallel splits), and a window
      // of 130 keys in splits of 256.
      {4, 2, 64, 16, {{300, 1}, {129, 1}, {127, 1}, {5, 1}}, 0, 0.0f, false, 64},
      {4, 2, 64, 16, {{300, 1}, {129, 1}, {127, 1}, {5, 1}}, 0, 0.0f, false, 256},
      {4, 2, 64, 16, {{300, 1}, {129, 1}, {127, 1}, {5, 1}}, 0, 0.0f, false, 512},
      {8, 4, 64, 16, {{300, 1}, {140, 20}, {0, 3}}, 130, 0.0f, false, 256},
  };
  const bool cpu_device = device_->info().type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  uint32_t seed = 100;
  int parallel_runs = 0;  // runs of the lanes kernel whose splits went in parallel
  for (const AttnCase& c : cases) {
    seed += 10;
    int longest_key = 0;
    for (const SeqSpec& s : c.seqs) longest_key = std::max(longest_key, s.n_past + s.n_tokens - 1);
    if (cpu_device &&
        uint64_t(longest_key) >= attention_max_keys(static_cast<uint32_t>(c.head_dim), family, c.split_keys)) {
      continue;  // past the loop budget: the runner never asks this of a CPU device
    }
    AttnRun r(c, seed);
    Buffer kb = make(pack_halves(r.k_)), vb = make(pack_halves(r.v_));
    // with_partials: room for the lanes kernel's split states and counts, so that steps of up to
    // kAttnParallelMaxTokens tokens over more than one split run them in parallel (the last split's
    // workgroup merging them).
    auto run_batch = [&](const std::vector<size_t>& which, bool with_partials) {
      const AttnRun::Batch b = r.batch(which);
      const uint32_t n = static_cast<uint32_t>(b.positions.size());
      Buffer qb = make(b.q), pb = make(b.positions), tb = make(b.token_seq), bt = make(b.block_tables);
      Buffer sb = make(r.sinks_.empty() ? std::vector<float>{0.0f} : r.sinks_);
      const gpu::AttnParams p = r.params(n);
      Buffer ob = device_->create_buffer(uint64_t{n} * p.out_stride * sizeof(float));
      const uint64_t longest = static_cast<uint64_t>(*std::max_element(b.positions.begin(), b.positions.end())) + 1;
      const uint64_t partials_bytes = attention_partials_bytes(p.n_heads, p.head_dim, longest, p.split_keys);
      // Split states over a pattern no state has (NaN bits), to see whether any were stored.
      const std::vector<uint32_t> untouched(partials_bytes / sizeof(uint32_t), 0xffffffffu);
      Buffer partials = make(untouched);
      const std::vector<uint32_t> zero_counts(attention_split_counts_bytes(p.n_heads) / sizeof(uint32_t), 0u);
      Buffer counts = make(zero_counts);
      const bool parallel = with_partials && attention_parallel_splits(p, family, longest, partials_bytes) > 1;
      uint32_t dispatches = 0;
      run([&](CommandBuffer& cmd) {
        record_attention(cmd, *kernels_,
                         AttnBindings{qb.view(), kb.view(), vb.view(), pb.view(), tb.view(), bt.view(), ob.view(),
                                      with_partials ? partials.view() : BufferView{}, sb.view(),
                                      with_partials ? counts.view() : BufferView{}},
                         p, family, longest);
        dispatches = cmd.dispatch_count();
      });
      // What record_attention did: one dispatch, which stored split states where it ran the splits
      // in parallel, and left every count at zero for the next.
      EXPECT_EQ(dispatches, 1u);
      EXPECT_EQ(read<uint32_t>(partials, untouched.size()) != untouched, parallel)
          << "longest row " << longest << " keys, " << n << " tokens";
      EXPECT_EQ(read<uint32_t>(counts, zero_counts.size()), zero_counts);
      if (parallel) ++parallel_runs;
      return std::make_pair(read<float>(ob, size_t{n} * p.out_stride), b);
    };

    std::vector<size_t> all(c.seqs.size());
    std::iota(all.begin(), all.end(), 0);
    const auto [got, b] = run_batch(all, false);
    // The same batch with its splits in parallel where it qualifies: the same bits.
    const auto [got_parallel, unused_batch] = run_batch(all, true);
    ASSERT_EQ(0, std::memcmp(got.data(), got_parallel.data(), got.size() * sizeof(float)))
        << "heads " << c.n_heads << " head_dim " << c.head_dim << ": splits in parallel differ";
    std::vector<float> want(got.size());
    test::attn_ref(r.ref_args(static_cast<int>(b.positions.size())), b.q, r.k_, r.v_, b.positions, b.token_seq,
                   b.block_tables, want);
    // Float sums over tens of thousands of keys drift further from the double reference; a lost
    // key moves the output by far more (0.8 to 1e31 in the old kernel).
    const int longest = *std::max_element(b.positions.begin(), b.positions.end());
    EXPECT_LT(normalized_error(got, want), longest > 10000 ? 2e-5 : 2e-6)
        << "heads " << c.n_heads << " head_dim " << c.head_dim << " longest position " << longest;

    // Each sequence alone (its splits in parallel where it qualifies): bit-identical rows.
    const size_t row = static_cast<size_t>(c.n_heads * c.head_dim);
    size_t first = 0;
    for (size_t s = 0; s < c.seqs.size(); ++s) {
      const auto [alone, unused] = run_batch({s}, true);
      ASSERT_EQ(alone.size(), static_cast<size_t>(c.seqs[s].n_tokens) * row);
      EXPECT_EQ(0, std::memcmp(alone.data(), got.data() + first * row, alone.size() * sizeof(float)))
          << "seq " << s << " differs alone vs batched";
      first += static_cast<size_t>(c.seqs[s].n_tokens);
    }
  }
  if (family == MatmulFamily::kLanes) {
    EXPECT_GE(parallel_runs, 8) << "the parallel splits were hardly exercised";
  }
}

// Quantized pools (attn_params.h) whose values are exact halves: each block's scale a power of two,
// so scale * int8 (Q8_0) or scale * (nibble - 8) (Q4_0) is a half and the same number an F16 pool
// holds. Reading them must give the F16 pools' output bit for bit (the kernels add the same products
// in the same order), which checks every index of the quant and scale planes; K alone in Q8_0, both
// in Q8_0, both in Q4_0, Q8_0 keys with Q4_0 values (two scale planes apart); windows, soft-caps,
// sinks, parallel splits, GQA, head_dim 32 and 64.
TEST_P(RunnerAttention, QuantPoolsGiveTheBitsOfTheirValuesAsF16) {
  const MatmulFamily family = GetParam();
  const std::vector<AttnCase> cases = {
      {4, 2, 32, 16, {{0, 12}, {30, 1}, {200, 9}, {5, 1}}, 8, 5.0f, true},
      {8, 4, 64, 7, {{300, 1}, {140, 20}, {0, 3}}},
  };
  uint32_t seed = 700;
  for (const AttnCase& c : cases) {
    AttnRun r(c, seed += 10);
    const size_t n_values = r.k_.size(), blocks = n_values / 32;
    // Random quants and power-of-two scales, as a pool's words and as the halves they decode to.
    std::mt19937 rng(seed);
    auto quant_pool = [&](uint32_t type, std::vector<uint16_t>& halves) {
      const size_t scales_at = n_values / (type == VKS_KV_Q4_0 ? 8 : 4);
      std::vector<uint32_t> words(scales_at + blocks, 0u);
      for (size_t b = 0; b < blocks; ++b) {
        const float scale = std::ldexp(1.0f, -4 - static_cast<int>(rng() % 5));
        words[scales_at + b] = std::bit_cast<uint32_t>(scale);
        for (size_t i = 0; i < 32; ++i) {
          const size_t at = b * 32 + i;
          int q = 0;
          if (type == VKS_KV_Q4_0) {
            const uint32_t nibble = rng() % 16;
            words[at / 8] |= nibble << (4 * (at % 8));
            q = static_cast<int>(nibble) - 8;
          } else {
            q = static_cast<int>(rng() % 255) - 127;
            words[at / 4] |= uint32_t(uint8_t(int8_t(q))) << (8 * (at % 4));
          }
          halves[at] = fp32_to_fp16(scale * static_cast<float>(q));  // exact: 7 bits times a power of two
        }
      }
      return words;
    };
    // Every quantized pool decodes to the same halves: Q8_0's drawn first, Q4_0's the same values
    // with quants of 4 bits, drawn again for both pools.
    std::vector<uint16_t> k8 = r.k_, v8 = r.v_;
    const std::vector<uint32_t> k_q8_words = quant_pool(VKS_KV_Q8_0, k8), v_q8_words = quant_pool(VKS_KV_Q8_0, v8);
    std::vector<uint16_t> k4 = r.k_, v4 = r.v_;
    const std::vector<uint32_t> k_q4_words = quant_pool(VKS_KV_Q4_0, k4), v_q4_words = quant_pool(VKS_KV_Q4_0, v4);
    Buffer k_q8 = make(k_q8_words), v_q8 = make(v_q8_words), k_q4 = make(k_q4_words), v_q4 = make(v_q4_words);
    std::vector<size_t> all(c.seqs.size());
    std::iota(all.begin(), all.end(), 0);
    const AttnRun::Batch b = r.batch(all);
    const uint32_t n = static_cast<uint32_t>(b.positions.size());
    Buffer qb = make(b.q), pb = make(b.positions), tb = make(b.token_seq), bt = make(b.block_tables);
    Buffer sb = make(r.sinks_.empty() ? std::vector<float>{0.0f} : r.sinks_);
    const uint64_t longest = static_cast<uint64_t>(*std::max_element(b.positions.begin(), b.positions.end())) + 1;
    const uint64_t partials_bytes = attention_partials_bytes(static_cast<uint32_t>(c.n_heads),
                                                             static_cast<uint32_t>(c.head_dim), longest, c.split_keys);
    Buffer partials = device_->create_buffer(partials_bytes);
    Buffer counts = make(std::vector<uint32_t>(attention_split_counts_bytes(static_cast<uint32_t>(c.n_heads)) / 4, 0u));
    // keys and values: the halves both pools of a run decode to (F16 pools of them stand in for F16).
    auto attend = [&](uint32_t k_type, uint32_t v_type, const std::vector<uint16_t>& keys,
                      const std::vector<uint16_t>& vals) {
      gpu::AttnParams p = r.params(n);
      p.k_type = k_type;
      p.v_type = v_type;
      p.k_scales_at = static_cast<uint32_t>(n_values / (k_type == VKS_KV_Q4_0 ? 8 : 4));
      p.v_scales_at = static_cast<uint32_t>(n_values / (v_type == VKS_KV_Q4_0 ? 8 : 4));
      Buffer ob = device_->create_buffer(uint64_t{n} * p.out_stride * sizeof(float));
      Buffer k_f16 = make(pack_halves(keys)), v_f16 = make(pack_halves(vals));
      const Buffer& kb = k_type == VKS_KV_Q8_0 ? k_q8 : k_type == VKS_KV_Q4_0 ? k_q4 : k_f16;
      const Buffer& vb = v_type == VKS_KV_Q8_0 ? v_q8 : v_type == VKS_KV_Q4_0 ? v_q4 : v_f16;
      run([&](CommandBuffer& cmd) {
        record_attention(cmd, *kernels_,
                         AttnBindings{qb.view(), kb.view(), vb.view(), pb.view(), tb.view(), bt.view(), ob.view(),
                                      partials.view(), sb.view(), counts.view()},
                         p, family, longest);
      });
      return read<float>(ob, size_t{n} * p.out_stride);
    };
    const uint32_t f16 = VKS_KV_F16, q8 = VKS_KV_Q8_0, q4 = VKS_KV_Q4_0;
    struct Run {
      uint32_t k_type, v_type;
      const std::vector<uint16_t>&keys, &vals;
    };
    // (Each pair of types is a pipeline to compile here. F16 keys with quantized values run in no
    // test: the runner suite only checks that stories260K refuses them.)
    const std::vector<float> want8 = attend(f16, f16, k8, v8), want4 = attend(f16, f16, k4, v4),
                             want84 = attend(f16, f16, k8, v4);
    for (const Run& run_types : {Run{q8, q8, k8, v8}, Run{q8, f16, k8, v8}, Run{q4, q4, k4, v4}, Run{q8, q4, k8, v4}}) {
      const std::vector<float>& want = &run_types.keys == &k4 ? want4 : &run_types.vals == &v4 ? want84 : want8;
      const std::vector<float> got = attend(run_types.k_type, run_types.v_type, run_types.keys, run_types.vals);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << "head_dim " << c.head_dim << " K " << run_types.k_type << " V " << run_types.v_type << ": "
          << normalized_error(got, want);
    }
    // And the F16 run is attention itself (the reference the other test holds every case to).
    std::vector<float> ref(want8.size());
    test::attn_ref(r.ref_args(static_cast<int>(n)), b.q, k8, v8, b.positions, b.token_seq, b.block_tables, ref);
    EXPECT_LT(normalized_error(want8, ref), 2e-6) << "head_dim " << c.head_dim;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, RunnerAttention, ::testing::Values(MatmulFamily::kRows, MatmulFamily::kLanes),
                         [](const ::testing::TestParamInfo<MatmulFamily>& family_info) {
                           return std::string(matmul_family_name(family_info.param));
                         });

// Loop iterations lavapipe counts when attn_f16 attends to `keys` keys, walked loop by loop as the
// shader runs them (each loop's exit test counts as one more): independent of attention_max_keys'
// closed form, so an off-by-one there shows up here.
uint64_t attention_loop_iterations(uint32_t head_dim, uint64_t keys) {
  const AttnSpecialization s = attention_specialization(head_dim);
  uint64_t count = 0;
  const auto dim_loop = [&] {
    for (uint32_t i0 = 0; i0 < s.half_head_dim; i0 += s.dim_step) ++count;
    ++count;  // its exit test
  };
  dim_loop();  // load q
  for (uint64_t base = 0; base < keys; base += VKS_ATTN_CHUNK) {
    ++count;     // the chunk loop
    dim_loop();  // scores
    dim_loop();  // values
  }
  ++count;     // the chunk loop's exit test
  dim_loop();  // write the output
  return count;
}

// The same for attn_lanes_f16 walking every split itself, loop by loop as attention_max_keys models it
// (unrolled loops counted as if they ran, 8 more a tile for what the measured edges showed).
uint64_t lanes_attention_loop_iterations(uint32_t head_dim, uint64_t keys, uint64_t split_keys) {
  const AttnSpecialization s = attention_specialization(head_dim);
  const uint64_t wg = VKS_ATTN_LANES_WG, owned_max = VKS_ATTN_MAX_HEAD_DIM / 2 / wg;
  uint64_t count = 0;
  const auto loop = [&](uint64_t iterations) { count += iterations + 1; };  // and its exit test
  loop((s.half_head_dim + wg - 1) / wg);  // load q
  loop(owned_max);                        // the empty state
  for (uint64_t split = 0; split * split_keys < keys; ++split) {
    ++count;          // the split loop
    loop(owned_max);  // clearing the pairs
    const uint64_t split_end = std::min(keys, (split + 1) * split_keys);
    for (uint64_t base = split * split_keys; base < split_end; base += wg) {
      ++count;                                    // the tile loop
      loop(s.half_head_dim / s.dim_step);         // scores
      for (int tree = 0; tree < 2; ++tree) {      // max and sum
        uint64_t levels = 0;
        for (uint64_t step = wg / 2; step > 0; step >>= 1) ++levels;
        loop(levels);
      }
      loop(owned_max);                            // values
      count += 8;
    }
    ++count;          // the tile loop's exit test
    loop(owned_max);  // merging the split
  }
  ++count;            // the split loop's exit test
  loop(owned_max);    // the output
  return count;
}

TEST(RunnerKernelShapes, AttentionFitsLavapipesLoopBudget) {
  // Every supported head size: a specialization that divides the head, and attention_max_keys the
  // largest whole number of chunks whose loops fit the budget; room for 30,000 keys at head sizes
  // that are multiples of 8 (those of every shipped model) and 8,000 at any (the runner caps the
  // context at attention_max_keys on CPU devices). The kernel test above checks the edge on the device.
  for (uint32_t head_dim = 2; head_dim <= VKS_ATTN_MAX_HEAD_DIM; head_dim += 2) {
    const AttnSpecialization s = attention_specialization(head_dim);
    EXPECT_EQ(s.half_head_dim, head_dim / 2);
    EXPECT_EQ(s.half_head_dim % s.dim_step, 0u) << head_dim;
    const uint64_t max_keys = attention_max_keys(head_dim, MatmulFamily::kRows, VKS_ATTN_SPLIT_KEYS);
    EXPECT_EQ(max_keys % VKS_ATTN_CHUNK, 0u) << head_dim;
    EXPECT_LE(attention_loop_iterations(head_dim, max_keys), uint64_t{VKS_LAVAPIPE_LOOP_BUDGET}) << head_dim;
    EXPECT_GT(attention_loop_iterations(head_dim, max_keys + VKS_ATTN_CHUNK), uint64_t{VKS_LAVAPIPE_LOOP_BUDGET})
        << head_dim << ": one more chunk would still fit";
    EXPECT_GE(max_keys, head_dim % 8 == 0 ? 30000u : 8000u) << head_dim;
    // attn_lanes_f16 (forced on a CPU device): still room for long contexts, and the closed form is
    // the largest whole number of splits the walk fits in the budget.
    // With every split size a runner may take.
    for (const uint32_t split : {64u, uint32_t{VKS_ATTN_SPLIT_KEYS}, 512u, uint32_t{VKS_ATTN_SPLIT_KEYS_MAX}}) {
      const uint64_t lanes_keys = attention_max_keys(head_dim, MatmulFamily::kLanes, split);
      EXPECT_GE(lanes_keys, head_dim % 8 == 0 ? 20000u : 8000u) << head_dim << " split " << split;
      EXPECT_EQ(lanes_keys % split, 0u) << head_dim << " split " << split;
      EXPECT_LE(lanes_attention_loop_iterations(head_dim, lanes_keys, split), uint64_t{VKS_LAVAPIPE_LOOP_BUDGET})
          << head_dim << " split " << split;
      EXPECT_GT(lanes_attention_loop_iterations(head_dim, lanes_keys + split, split), uint64_t{VKS_LAVAPIPE_LOOP_BUDGET})
          << head_dim << " split " << split << ": one more split would still fit";
    }
  }
  std::printf("attn_lanes_f16 on lavapipe: at most %llu keys at head_dim 64, %llu at 128, %llu at 256\n",
              static_cast<unsigned long long>(attention_max_keys(64, MatmulFamily::kLanes, VKS_ATTN_SPLIT_KEYS)),
              static_cast<unsigned long long>(attention_max_keys(128, MatmulFamily::kLanes, VKS_ATTN_SPLIT_KEYS)),
              static_cast<unsigned long long>(attention_max_keys(256, MatmulFamily::kLanes, VKS_ATTN_SPLIT_KEYS)));
  // And never past the edges measured on lavapipe (Mesa 22.3) by bisecting the key count: keys were
  // lost past 279,579 at head_dim 64 and past 87,352 at 256 (before the kernel walked splits, which
  // lowered the edges a little; the attention test above runs the count's last key on the device).
  EXPECT_LE(attention_max_keys(64, MatmulFamily::kLanes, VKS_ATTN_SPLIT_KEYS), 279579u);
  EXPECT_LE(attention_max_keys(256, MatmulFamily::kLanes, VKS_ATTN_SPLIT_KEYS), 87352u);
}

TEST(RunnerKernelShapes, RejectsUnsupportedHeads) {
  EXPECT_THROW(check_attention_shape(6, 4, 64, 64), Error);
  EXPECT_THROW(check_attention_shape(8, 4, 9, 8), Error);
  EXPECT_THROW(check_attention_shape(8, 4, 512, 64), Error);
  EXPECT_THROW(check_attention_shape(8, 4, 64, 65), Error);
  EXPECT_NO_THROW(check_attention_shape(32, 4, 64, 64));
}

}  // namespace
}  // namespace vks::vk
