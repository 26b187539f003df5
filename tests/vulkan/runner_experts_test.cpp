// Expert layers on the Vulkan runner (qwen3moe-tiny: 8 experts, 2 per token): a sequence's tokens
// and logits, bit for bit, do not depend on which other tokens share its experts in a step, on
// chunked prefill, or on decoding token by token. Tokens of different sequences pick different
// experts, so every step groups rows of several sequences per expert.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/vulkan_runner.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_test_util.h"

namespace vks {
namespace {

class RunnerExperts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    model_ = LlamaModel::load(test::model_path("qwen3moe-tiny.gguf"));
    ASSERT_EQ(model_->config().layers[0].ffn.n_experts, 8u);
    RunnerOptions o;
    o.num_blocks = 128;
    o.max_step_tokens = 64;
    o.max_step_seqs = 8;
    runner_ = std::make_unique<VulkanRunner>(*model_, o);
  }

  std::vector<int32_t> prompt(int len, uint32_t seed) const {
    return test::random_prompt(len, seed, model_->config().vocab_size);
  }
  static void expect_same(const std::vector<test::SeqResult>& a, const std::vector<test::SeqResult>& b) {
    test::expect_same_results(a, b);
  }

  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<VulkanRunner> runner_;
};

TEST_F(RunnerExperts, SequencesBatchedEqualAlone) {
  const int lengths[] = {1, 4, 9, 17, 30};
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 5; ++i) prompts.push_back(prompt(lengths[i], 300 + static_cast<uint32_t>(i)));
  test::GenerateOptions o;
  o.n_gen = 6;
  o.full_logits = true;
  o.batched = false;
  test::GreedyDriver alone_driver(*runner_, 1);
  const auto alone = alone_driver.run(prompts, o);
  o.batched = true;
  test::GreedyDriver batched_driver(*runner_, 2);
  expect_same(alone, batched_driver.run(prompts, o));
  EXPECT_NE(alone[0].generated, alone[4].generated);
}

TEST_F(RunnerExperts, PrefillInChunksEqualsOnePiece) {
  const std::vector<std::vector<int32_t>> prompts{prompt(40, 7), prompt(23, 8)};
  test::GenerateOptions o;
  o.n_gen = 8;
  o.full_logits = true;
  test::GreedyDriver whole_driver(*runner_, 5);
  const auto whole = whole_driver.run(prompts, o);
  o.chunk = 7;
  test::GreedyDriver chunked_driver(*runner_, 6);
  expect_same(whole, chunked_driver.run(prompts, o));
  o.chunk = 1;
  test::GreedyDriver single_driver(*runner_, 9);
  expect_same(whole, single_driver.run(prompts, o));
}

}  // namespace
}  // namespace vks
