// The CPU backend's Q8_0 KV cache (engine/cpu/kv_q8.h): the block quantization, paged attention
// over it against the float attention of the values it decodes to, and the runner batch- and
// chunk-invariant on it and within quantization error of the F32 cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "engine/common/error.h"
#include "engine/cpu/cpu_runner.h"
#include "engine/cpu/kv_q8.h"
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

TEST(CpuKvQ8, BlocksRoundToTheNearestStepOfMaxOver127) {
  std::vector<float> x = random_values(96, 1, 3.0f);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block stays zero
  x[70] = -5.0f;                                    // the block's largest magnitude maps to -127
  std::vector<int8_t> q(96);
  std::vector<float> scales(3);
  cpu::quantize_kv_q8(x.data(), x.size(), q.data(), scales.data());
  EXPECT_EQ(scales[1], 0.0f);
  EXPECT_FLOAT_EQ(scales[2], 5.0f / 127.0f);
  EXPECT_EQ(q[70], -127);
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = scales[i / 32];
    EXPECT_LE(std::fabs(q[i] * d - x[i]), 0.5f * d * 1.0001f + 1e-7f) << i;
  }
}

TEST(CpuKvQ8, PagedAttentionEqualsAttentionOverTheDecodedValues) {
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
  std::vector<int8_t> kq(keys.size()), vq(values.size());
  std::vector<float> ks(keys.size() / 32), vs(values.size() / 32);
  cpu::quantize_kv_q8(keys.data(), keys.size(), kq.data(), ks.data());
  cpu::quantize_kv_q8(values.data(), values.size(), vq.data(), vs.data());
  std::vector<float> kd(keys.size()), vd(values.size());  // the values the Q8_0 pools hold
  for (size_t i = 0; i < kd.size(); ++i) {
    kd[i] = kq[i] * ks[i / 32];
    vd[i] = vq[i] * vs[i / 32];
  }
  const std::vector<int32_t> table{3, 0, 2, 1};  // blocks out of order
  const std::vector<float> q = random_values(p.n_heads * p.head_dim, 4, 1.0f);
  std::vector<float> got(p.n_heads * p.head_dim), want(got.size());
  cpu::attention_paged_q8(got.data(), q.data(), kq.data(), ks.data(), vq.data(), vs.data(), table, block_size, first,
                          n_ctx, kv_dim, p);
  ref::attention_paged(want.data(), q.data(), kd.data(), vd.data(), table, block_size, first, n_ctx, kv_dim, p);
  // The Q8_0 pools decode each row, then attend as the f32 pools do: the same bits.
  EXPECT_EQ(got, want);
  p.head_begin = 1;  // a thread's share of the heads gives those heads' bits
  p.head_end = 3;
  std::vector<float> part(got.size(), -7.0f);  // heads outside the share must keep this
  cpu::attention_paged_q8(part.data(), q.data(), kq.data(), ks.data(), vq.data(), vs.data(), table, block_size, first,
                          n_ctx, kv_dim, p);
  EXPECT_TRUE(std::equal(part.begin() + 1 * p.head_dim, part.begin() + 3 * p.head_dim, got.begin() + 1 * p.head_dim));
  EXPECT_TRUE(std::all_of(part.begin(), part.begin() + p.head_dim, [](float v) { return v == -7.0f; }));
  EXPECT_TRUE(std::all_of(part.begin() + 3 * p.head_dim, part.end(), [](float v) { return v == -7.0f; }));
}

class CpuRunnerKvQ8 : public ::testing::Test {
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

TEST_F(CpuRunnerKvQ8, BatchedAndChunkedEqualAloneAndStayNearF32) {
  const std::vector<size_t> lengths{1, 20, 45};
  const size_t n_gen = 6;
  std::vector<test::Seq> alone(lengths.size()), f32(lengths.size()), chunked(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    for (auto [seqs, type, chunk] : {std::tuple{&alone, KvType::kQ8_0, 0}, std::tuple{&f32, KvType::kF16, 0},
                                     std::tuple{&chunked, KvType::kQ8_0, 7}}) {
      CpuRunner runner(*model_, options(type));
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
  CpuRunner runner(*model_, options(KvType::kQ8_0));
  EXPECT_EQ(runner.kv_type(), "q8_0");
  ASSERT_EQ(model_->config().kv_dim(), 64u);  // K and V rows: 64 int8 and 2 f32 scales each, every layer
  EXPECT_EQ(runner.kv_bytes_per_token(), model_->config().n_layers * 2u * (64 + 2 * 4));
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
    EXPECT_LT(err, 2e-2) << "sequence " << i;
    if (lengths[i] > 1) {
      EXPECT_GT(err, 0.0) << "sequence " << i << ": the Q8_0 cache gave F32's logits";
    }
  }
}

TEST_F(CpuRunnerKvQ8, RefusedWhereABlockWouldStraddleHeads) {
  const auto stories = LlamaModel::load(test::model_path("stories260K.gguf"));  // head_dim 8
  try {
    CpuRunner runner(*stories, options(KvType::kQ8_0));
    FAIL() << "a Q8_0 cache of head_dim 8 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("multiples of 32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vks
