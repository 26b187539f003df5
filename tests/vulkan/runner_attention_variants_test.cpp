// Attention variants on the Vulkan runner (sliding windows beside global layers, soft-capped scores,
// sinks; ../shared/models README): a sequence's logits, bit for bit, do not depend on the other
// sequences of its steps, on chunked prefill or on decoding token by token, with prompts that run
// past the fixtures' 8-key windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/vulkan_runner.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_test_util.h"

namespace vks {
namespace {

class RunnerAttentionVariants : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    model_ = LlamaModel::load(test::model_path(GetParam() + ".gguf"));
    ASSERT_GT(model_->config().max_window(), 0u);
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

TEST_P(RunnerAttentionVariants, SequencesBatchedEqualAlone) {
  const int lengths[] = {1, 5, 9, 20, 37};
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 5; ++i) prompts.push_back(prompt(lengths[i], 500 + static_cast<uint32_t>(i)));
  test::expect_batched_equals_alone(*runner_, prompts, 6, 1);
}

TEST_P(RunnerAttentionVariants, PrefillInChunksEqualsOnePiece) {
  test::expect_chunked_equals_whole(*runner_, {prompt(40, 17), prompt(23, 18)}, 8, 5);
}

std::string variant_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(Models, RunnerAttentionVariants,
                         ::testing::Values("gemma2-tiny", "gemma3-tiny", "gpt-oss-tiny", "gemma4-dense-tiny"),
                         variant_name);

}  // namespace
}  // namespace vks
