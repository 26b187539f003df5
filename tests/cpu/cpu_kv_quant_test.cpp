// The CPU backend's quantized KV caches (engine/cpu/kv_quant.h, Q8_0 and Q4_0): the block
// quantizations, paged attention over them against the float attention of the values they decode
// to, and the runner batch- and chunk-invariant on them and within quantization error of the F32
// cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "engine/common/error.h"
#include "engine/cpu/cpu_runner.h"
#include "engine/cpu/kv_quant.h"
#include "engine/cpu/reference_ops.h"
#include "engine/model/llama_model.h"
#include "tests/common/test_models.h"
#include "tests/cpu/cpu_runner_driver.h"

namespace vks {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float range) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-range, range);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

double normalized_error(const std::vector<float>& got, const std::vector<float>& want) {
  double d2 = 0, w2 = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    d2 += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    w2 += double(want[i]) * want[i];
  }
  return std::sqrt(d2 / std::max(w2, 1e-30));
}

// The values a quantized row stands for.
std::vector<float> decode(KvType type, const std::vector<uint8_t>& q, const std::vector<float>& scales) {
  std::vector<float> out(scales.size() * cpu::kKvBlock);
  for (size_t i = 0; i < out.size(); ++i) {
    const int quant = type == KvType::kQ4_0 ? ((q[i / 2] >> (4 * (i % 2))) & 15) - 8 : static_cast<int8_t>(q[i]);
    out[i] = static_cast<float>(quant) * scales[i / cpu::kKvBlock];
  }
  return out;
}

TEST(CpuKvQuant, Q8BlocksRoundToTheNearestStepOfMaxOver127) {
  std::vector<float> x = random_values(96, 1, 3.0f);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block stays zero
  x[70] = -5.0f;                                    // the block's largest magnitude maps to -127
  std::vector<uint8_t> q(kv_plane_bytes(KvType::kQ8_0, 96));
  std::vector<float> scales(3);
  cpu::quantize_kv(KvType::kQ8_0, x.data(), x.size(), q.data(), scales.data());
  EXPECT_EQ(scales[1], 0.0f);
  EXPECT_FLOAT_EQ(scales[2], 5.0f / 127.0f);
  EXPECT_EQ(static_cast<int8_t>(q[70]), -127);
  const std::vector<float> got = decode(KvType::kQ8_0, q, scales);
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = scales[i / 32];
    EXPECT_LE(std::fabs(got[i] - x[i]), 0.5f * d * 1.0001f + 1e-7f) << i;
  }
}

// llama.cpp's quantize_row_q4_0_ref numbers: the block's value of largest magnitude (the first of
// equals) is -8 steps, so it decodes exactly; the others round to the nearest step, except past +7
// steps (the far side from that value), where they stop at +7.
TEST(CpuKvQuant, Q4BlocksAreLlamaCppsQ4_0) {
  std::vector<float> x = random_values(128, 11, 2.0f);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block stays zero
  x[70] = 3.0f;                                     // a positive peak: a negative scale
  x[75] = -3.0f;                                    // equal magnitude, later: not the peak
  x[100] = -2.5f;
  std::vector<uint8_t> q(kv_plane_bytes(KvType::kQ4_0, 128));
  ASSERT_EQ(q.size(), 64u);
  std::vector<float> scales(4);
  cpu::quantize_kv(KvType::kQ4_0, x.data(), x.size(), q.data(), scales.data());
  EXPECT_EQ(scales[1], 0.0f);
  EXPECT_EQ(scales[2], 3.0f / -8.0f);
  EXPECT_EQ(scales[3], 2.5f / 8.0f);
  const std::vector<float> got = decode(KvType::kQ4_0, q, scales);
  EXPECT_EQ(got[70], 3.0f) << "the peak decodes exactly";
  EXPECT_EQ(got[100], -2.5f);
  EXPECT_EQ(got[75], -3.0f * 7.0f / 8.0f) << "the far side stops at +7 steps";
  for (size_t i = 32; i < 64; ++i) EXPECT_EQ(got[i], 0.0f) << i;
  // Value 2i in the low nibble of byte i (not llama.cpp's split halves).
  EXPECT_EQ(q[35] & 15, 0) << "value 70, the peak, is nibble 0";
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = std::fabs(scales[i / 32]);
    const float steps = scales[i / 32] != 0.0f ? x[i] / scales[i / 32] : 0.0f;
    const float bound = steps > 7.5f ? (steps - 7.0f) * d : 0.5f * d;
    EXPECT_LE(std::fabs(got[i] - x[i]), bound * 1.0001f + 1e-7f) << i;
  }
}

class QuantKvAttention : public ::testing::TestWithParam<KvType> {};

TEST_P(QuantKvAttention, PagedAttentionEqualsAttentionOverTheDecodedValues) {
  const KvType type = GetParam();
  ref::AttentionParams p;
  p.n_heads = 4;
  p.n_kv_heads = 2;
  p.head_dim = 64;
  p.scale = 0.125f;
  p.softcap = 30.0f;
  const std::vector<float> sinks{0.5f, -1.0f, 2.0f, 0.0f};
  p.sinks = sinks.data();
  const size_t kv_dim = 128, block_size = 16, n_slots = 64, n_ctx = 37, first = 3;
  const std::vector<float> keys = random_values(n_slots * kv_dim, 2, 2.0f), values = random_values(n_slots * kv_dim, 3, 1.0f);
  std::vector<uint8_t> kq(kv_plane_bytes(type, keys.size())), vq(kq.size());
  std::vector<float> ks(keys.size() / 32), vs(values.size() / 32);
  cpu::quantize_kv(type, keys.data(), keys.size(), kq.data(), ks.data());
  cpu::quantize_kv(type, values.data(), values.size(), vq.data(), vs.data());
  const std::vector<float> kd = decode(type, kq, ks), vd = decode(type, vq, vs);  // the values the pools hold
  const cpu::QuantKvPools pools{type, kq.data(), ks.data(), vq.data(), vs.data()};
  const std::vector<int32_t> table{3, 0, 2, 1};  // blocks out of order
  const std::vector<float> q = random_values(p.n_heads * p.head_dim, 4, 1.0f);
  std::vector<float> got(p.n_heads * p.head_dim), want(got.size());
  cpu::attention_paged_quant(got.data(), q.data(), pools, table, block_size, first, n_ctx, kv_dim, p);
  ref::attention_paged(want.data(), q.data(), kd.data(), vd.data(), table, block_size, first, n_ctx, kv_dim, p);
  // The quantized pools decode each row, then attend as the f32 pools do: the same bits.
  EXPECT_EQ(got, want);
  p.head_begin = 1;  // a thread's share of the heads gives those heads' bits
  p.head_end = 3;
  std::vector<float> part(got.size(), -7.0f);  // heads outside the share must keep this
  cpu::attention_paged_quant(part.data(), q.data(), pools, table, block_size, first, n_ctx, kv_dim, p);
  EXPECT_TRUE(std::equal(part.begin() + 1 * p.head_dim, part.begin() + 3 * p.head_dim, got.begin() + 1 * p.head_dim));
  EXPECT_TRUE(std::all_of(part.begin(), part.begin() + p.head_dim, [](float v) { return v == -7.0f; }));
  EXPECT_TRUE(std::all_of(part.begin() + 3 * p.head_dim, part.end(), [](float v) { return v == -7.0f; }));
}

INSTANTIATE_TEST_SUITE_P(Types, QuantKvAttention, ::testing::Values(KvType::kQ8_0, KvType::kQ4_0),
                         [](const auto& type_info) { return std::string(kv_type_name(type_info.param)); });

class CpuRunnerKvQuant : public ::testing::TestWithParam<KvType> {
 protected:
  void SetUp() override { model_ = LlamaModel::load(test::model_path("qwen2-tiny.gguf")); }  // head_dim 32
  CpuRunnerOptions options(KvType type) const {
    CpuRunnerOptions o;
    o.num_blocks = 32;
    o.threads = 2;
    o.kv_type = type;
    return o;
  }
  std::vector<int32_t> prompt(size_t n, uint32_t seed) const {
    std::mt19937 rng(seed);
    std::vector<int32_t> ids(n);
    for (int32_t& t : ids) t = static_cast<int32_t>(rng() % model_->config().vocab_size);
    return ids;
  }
  std::unique_ptr<LlamaModel> model_;
};

TEST_P(CpuRunnerKvQuant, BatchedAndChunkedEqualAloneAndStayNearF32) {
  const KvType type = GetParam();
  const std::vector<size_t> lengths{1, 20, 45};
  const size_t n_gen = 6;
  std::vector<test::Seq> alone(lengths.size()), f32(lengths.size()), chunked(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    for (auto [seqs, run_type, chunk] : {std::tuple{&alone, type, 0}, std::tuple{&f32, KvType::kF16, 0},
                                         std::tuple{&chunked, type, 7}}) {
      CpuRunner runner(*model_, options(run_type));
      test::Driver d(runner);
      test::Seq& seq = (*seqs)[i];
      seq.tokens = prompt(lengths[i], 10 + static_cast<uint32_t>(i));
      while (seq.tokens.size() < lengths[i] + n_gen) {
        const int32_t left = static_cast<int32_t>(seq.tokens.size()) - seq.n_cached;
        d.add(seq, chunk > 0 ? std::min(left, chunk) : left);
        d.run();
      }
    }
  }
  CpuRunner runner(*model_, options(type));
  EXPECT_EQ(runner.kv_type(), kv_type_name(type));
  // K and V rows: 64 int8 (Q8_0) or 32 bytes of nibbles (Q4_0), and 2 f32 scales each, every layer.
  ASSERT_EQ(model_->config().kv_dim(), 64u);
  EXPECT_EQ(runner.kv_bytes_per_token(), model_->config().n_layers * 2u * ((type == KvType::kQ4_0 ? 32 : 64) + 2 * 4));
  test::Driver d(runner);
  std::vector<test::Seq> batched(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) batched[i].tokens = alone[i].tokens;
  for (auto& s : batched) s.tokens.resize(s.tokens.size() - n_gen);
  for (bool any = true; any;) {
    any = false;
    for (size_t i = 0; i < batched.size(); ++i) {
      if (batched[i].tokens.size() >= lengths[i] + n_gen) continue;
      d.add(batched[i], static_cast<int32_t>(batched[i].tokens.size()) - batched[i].n_cached);
      any = true;
    }
    if (any) d.run();
  }
  for (size_t i = 0; i < lengths.size(); ++i) {
    EXPECT_EQ(batched[i].tokens, alone[i].tokens) << "sequence " << i;
    EXPECT_EQ(batched[i].logits, alone[i].logits) << "sequence " << i << ": batched differs from alone";
    EXPECT_EQ(chunked[i].logits, alone[i].logits) << "sequence " << i << ": chunked differs from whole";
    const double err = normalized_error(alone[i].logits[0], f32[i].logits[0]);
    EXPECT_LT(err, type == KvType::kQ4_0 ? 1e-1 : 2e-2) << "sequence " << i;
    if (lengths[i] > 1) {
      EXPECT_GT(err, 0.0) << "sequence " << i << ": the quantized cache gave F32's logits";
    }
  }
}

TEST_P(CpuRunnerKvQuant, RefusedWhereABlockWouldStraddleHeads) {
  const auto stories = LlamaModel::load(test::model_path("stories260K.gguf"));  // head_dim 8
  try {
    CpuRunner runner(*stories, options(GetParam()));
    FAIL() << "a quantized cache of head_dim 8 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("multiples of 32"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CpuRunnerKvQuant, ::testing::Values(KvType::kQ8_0, KvType::kQ4_0),
                         [](const auto& type_info) { return std::string(kv_type_name(type_info.param)); });

}  // namespace
}  // namespace vks
