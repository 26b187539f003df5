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

  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<VulkanRunner> runner_;
};

TEST_F(RunnerExperts, SequencesBatchedEqualAlone) {
  const int lengths[] = {1, 4, 9, 17, 30};
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 5; ++i) prompts.push_back(prompt(lengths[i], 300 + static_cast<uint32_t>(i)));
  const auto alone = test::expect_batched_equals_alone(*runner_, prompts, 6, 1);
  EXPECT_NE(alone[0].generated, alone[4].generated);
}

TEST_F(RunnerExperts, PrefillInChunksEqualsOnePiece) {
  test::expect_chunked_equals_whole(*runner_, {prompt(40, 7), prompt(23, 8)}, 8, 5);
}

}  // namespace
}  // namespace vks
