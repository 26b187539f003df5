// The quantized KV caches (RunnerOptions::kv_type_k / kv_type_v, Q8_0 and Q4_0): batch-invariant
// like the F16 one, within quantization error of it, and refused where a block would straddle two
// heads (and K and V of different types on the CPU backend, which takes one type for both).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/runner_factory.h"
#include "engine/vulkan/runner/vulkan_runner.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_reference.h"
#include "tests/vulkan/runner_test_util.h"
#include "tests/vulkan/synthetic_models.h"

namespace vks {
namespace {

class RunnerKvType : public ::testing::TestWithParam<KvType> {
 protected:
  static void SetUpTestSuite() {
    if (vk::list_devices().empty()) return;
    models_ = std::make_unique<test::SyntheticModels>("runner_kv_type");
    // head_dim 32 (one Q8_0 block a head), GQA 2:1, Q8_0 weights.
    path_ = models_->make("kv32", "-t q8_0 --dim 128 --heads 4 --kv-heads 2 --hidden 256 --vocab 300 --layers 2 --seed 9");
  }
  static void TearDownTestSuite() { models_.reset(); }
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    ASSERT_FALSE(path_.empty()) << "vks-make-model failed: build the vks-make-model target";
    model_ = LlamaModel::load(path_);
  }

  std::unique_ptr<VulkanRunner> runner(KvType k, KvType v) const {
    RunnerOptions o;
    o.num_blocks = 64;
    o.block_size = 16;
    o.max_step_tokens = 96;
    o.max_step_seqs = 8;
    o.kv_type_k = k;
    o.kv_type_v = v;
    return std::make_unique<VulkanRunner>(*model_, o);
  }

  // Prompts of one token, of a block and a half, and past one 128-key attention split.
  static std::vector<std::vector<int32_t>> prompts() {
    return {test::random_prompt(1, 11, 300), test::random_prompt(24, 12, 300), test::random_prompt(150, 13, 300)};
  }

  static inline std::unique_ptr<test::SyntheticModels> models_;
  static inline std::string path_;
  std::unique_ptr<LlamaModel> model_;
};

TEST_P(RunnerKvType, QuantizedCacheIsBatchInvariantAndCloseToF16) {
  const KvType type = GetParam();
  auto quantized = runner(type, type);
  auto f16 = runner(KvType::kF16, KvType::kF16);
  EXPECT_EQ(quantized->kv_type(), kv_type_name(type));
  EXPECT_EQ(f16->kv_type(), "f16");
  // kv_dim 64: 2 layers x (K + V) x (64 int8 or 32 bytes of nibbles, + 2 f32 scales) against 2 x 2 x
  // 128 bytes.
  EXPECT_EQ(quantized->kv_bytes_per_token(), 2u * 2 * ((type == KvType::kQ4_0 ? 32 : 64) + 8));
  EXPECT_EQ(f16->kv_bytes_per_token(), 2u * 2 * 128);
  const auto ps = prompts();
  const auto with_quantized = test::expect_batched_equals_alone(*quantized, ps, 8, 5);
  test::expect_chunked_equals_whole(*quantized, {ps[1]}, 4, 9);
  test::GreedyDriver driver(*f16, 5);
  test::GenerateOptions g;
  g.n_gen = 8;
  g.full_logits = true;
  for (size_t i = 0; i < ps.size(); ++i) {
    const test::SeqResult with_f16 = driver.run({ps[i]}, g)[0];
    ASSERT_EQ(with_f16.logits.size(), with_quantized[i].logits.size());
    // The first row depends on the prompt's keys alone; compare it (later rows follow tokens that
    // may differ once the two caches pick different ones).
    const double err = test::normalized_error(with_quantized[i].logits[0], with_f16.logits[0]);
    std::printf("prompt %zu (%zu tokens): %s KV logits vs F16 KV, normalized error %.3g\n", i, ps[i].size(),
                kv_type_name(type).data(), err);
    // Q4_0's step is 127/8 = 16x Q8_0's, and so, near enough, is its error on this random model
    // (0.10-0.25 against 0.006-0.014 when written).
    EXPECT_LT(err, type == KvType::kQ4_0 ? 3.5e-1 : 2e-2) << "prompt " << i;
    if (ps[i].size() > 1) {  // one token attends to itself alone: the weights sum to 1 whatever K is
      EXPECT_NE(std::memcmp(with_quantized[i].logits[0].data(), with_f16.logits[0].data(), with_f16.logits[0].size() * 4), 0)
          << "prompt " << i << ": the quantized cache gave the F16 cache's bits: was it used?";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, RunnerKvType, ::testing::Values(KvType::kQ8_0, KvType::kQ4_0),
                         [](const auto& type_info) { return std::string(kv_type_name(type_info.param)); });

// K and V of two types: each pool with its own scale plane (Q8_0's after 4 values a uint, Q4_0's
// after 8), and F16 values beside quantized keys.
TEST_F(RunnerKvType, MixedTypesStayBatchInvariant) {
  auto mixed = runner(KvType::kQ8_0, KvType::kQ4_0);
  EXPECT_EQ(mixed->kv_type(), "q8_0/q4_0");
  EXPECT_EQ(mixed->kv_bytes_per_token(), 2u * (64 + 8 + 32 + 8));
  const auto ps = prompts();
  const auto lone = test::expect_batched_equals_alone(*mixed, ps, 4, 7);
  // Near the F16 cache's logits: each pool read its own scales (the longest prompt: past a split).
  auto f16 = runner(KvType::kF16, KvType::kF16);
  test::GreedyDriver driver(*f16, 5);
  test::GenerateOptions g;
  g.n_gen = 1;
  g.full_logits = true;
  const double err = test::normalized_error(lone[2].logits[0], driver.run({ps[2]}, g)[0].logits[0]);
  std::printf("Q8_0 keys, Q4_0 values: logits vs F16 KV, normalized error %.3g\n", err);
  EXPECT_LT(err, 2e-1);  // 0.099 when written: the values' Q4_0 step
  EXPECT_GT(err, 0.0);
  auto keys = runner(KvType::kQ4_0, KvType::kF16);
  EXPECT_EQ(keys->kv_type(), "q4_0/f16");
  test::expect_chunked_equals_whole(*keys, {ps[1]}, 4, 9);
}

TEST_F(RunnerKvType, RefusedWhereABlockWouldStraddleHeadsAndMixedOnTheCpuBackend) {
  const auto stories = LlamaModel::load(test::model_path("stories260K.gguf"));  // head_dim 8
  RunnerOptions o;
  o.num_blocks = 16;
  o.kv_type_v = KvType::kQ8_0;
  try {
    VulkanRunner r(*stories, o);
    FAIL() << "a Q8_0 cache of head_dim 8 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("multiples of 32"), std::string::npos) << e.what();
  }
  RunnerOptions cpu;
  cpu.force_cpu = true;
  cpu.kv_type_k = KvType::kQ8_0;
  try {
    make_runner(*model_, cpu);
    FAIL() << "the CPU backend accepted Q8_0 keys beside F32 values";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("--vulkan"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vks
