// Batch invariance of the Vulkan runner on stories260K: a sequence's tokens (and logits, bit for
// bit) do not depend on what else is in the step, on chunked prefill, or on where its KV blocks are.
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

class RunnerBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    model_ = LlamaModel::load(test::model_path("stories260K.gguf"));
    RunnerOptions o;
    o.num_blocks = 512;
    o.max_step_tokens = 96;
    o.max_step_seqs = 16;
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

TEST_F(RunnerBatch, EightSequencesOfDifferentLengthsBatchedEqualAlone) {
  const int lengths[] = {1, 2, 5, 9, 16, 17, 33, 50};
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; ++i) prompts.push_back(prompt(lengths[i], 100 + static_cast<uint32_t>(i)));
  const auto alone = test::expect_batched_equals_alone(*runner_, prompts, 20, 1);
  // The greedy path must actually produce something that depends on the prompt.
  EXPECT_NE(alone[0].generated, alone[7].generated);
}

TEST_F(RunnerBatch, SixteenDecodingSequencesEqualAlone) {
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 16; ++i) prompts.push_back(prompt(3 + i, 200 + static_cast<uint32_t>(i)));
  test::expect_batched_equals_alone(*runner_, prompts, 8, 3);
}

TEST_F(RunnerBatch, PrefillInChunksOfSevenEqualsOnePiece) {
  const std::vector<std::vector<int32_t>> prompts{prompt(45, 7), prompt(70, 8)};
  test::GenerateOptions o;
  o.n_gen = 16;
  o.full_logits = true;
  test::GreedyDriver whole_driver(*runner_, 5);
  const auto whole = whole_driver.run(prompts, o);
  o.chunk = 7;
  test::GreedyDriver chunked_driver(*runner_, 6);
  expect_same(whole, chunked_driver.run(prompts, o));
  o.chunk = 1;  // token by token: the decode path computes the prompt
  test::GreedyDriver single_driver(*runner_, 9);
  expect_same(whole, single_driver.run(prompts, o));
}

TEST_F(RunnerBatch, RowsPastOneAttentionSplitEqualInEveryChunking) {
  // Past 128 keys (VKS_ATTN_SPLIT_KEYS) the GPU attention kernel (the lanes family:
  // vks_vulkan_runner_lanes_tests) runs the splits of a step of up to 16 tokens in parallel and
  // merges them in a second dispatch; chunks of 90 tokens walk them in one workgroup. Same tokens,
  // same logits bits either way.
  const std::vector<std::vector<int32_t>> prompts{prompt(150, 11), prompt(290, 12)};
  test::GenerateOptions o;
  o.n_gen = 12;
  o.full_logits = true;
  o.chunk = 90;
  test::GreedyDriver serial_driver(*runner_, 13);
  const auto serial = serial_driver.run(prompts, o);
  o.chunk = 7;
  test::GreedyDriver chunked_driver(*runner_, 14);
  expect_same(serial, chunked_driver.run(prompts, o));
  o.chunk = 1;
  test::GreedyDriver single_driver(*runner_, 15);
  expect_same(serial, single_driver.run(prompts, o));
}

}  // namespace
}  // namespace vks
