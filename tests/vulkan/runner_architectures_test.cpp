// The architectures beyond llama on the Vulkan runner, each on its fixture (../shared/models
// README): experts (qwen3moe-tiny: 8 experts, 2 per token, so every step groups rows of several
// sequences per expert) and attention variants (sliding windows beside global layers, soft-capped
// scores, sinks, Gemma 4's two head sizes) and Gated DeltaNet layers (qwen35-tiny, qwen35moe-tiny: a
// recurrent state slot per sequence, a gated attention output, a gated shared expert). A sequence's
// logits, bit for bit, do not depend on the other sequences of its steps or on which of them share
// its experts, on chunked prefill or on decoding token by token, with prompts that run past the
// fixtures' windows.
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

// What a fixture is here for.
enum class Feature { kExperts, kWindows, kRecurrent };

struct ArchitectureCase {
  std::string model;  // fixture file stem
  Feature feature;
};

class RunnerArchitectures : public ::testing::TestWithParam<ArchitectureCase> {
 protected:
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    model_ = LlamaModel::load(test::model_path(GetParam().model + ".gguf"));
    switch (GetParam().feature) {
      case Feature::kExperts: ASSERT_EQ(model_->config().layers[0].ffn.n_experts, 8u); break;
      case Feature::kWindows: ASSERT_GT(model_->config().max_window(), 0u); break;
      case Feature::kRecurrent: ASSERT_TRUE(model_->config().has_recurrent_layers()); break;
    }
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

TEST_P(RunnerArchitectures, SequencesBatchedEqualAlone) {
  const int lengths[] = {1, 5, 9, 20, 37};
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 5; ++i) prompts.push_back(prompt(lengths[i], 500 + static_cast<uint32_t>(i)));
  const auto alone = test::expect_batched_equals_alone(*runner_, prompts, 6, 1);
  if (GetParam().feature != Feature::kWindows) {
    EXPECT_NE(alone[0].generated, alone[4].generated);
  }
}

TEST_P(RunnerArchitectures, PrefillInChunksEqualsOnePiece) {
  test::expect_chunked_equals_whole(*runner_, {prompt(40, 17), prompt(23, 18)}, 8, 5);
}

std::string case_name(const ::testing::TestParamInfo<ArchitectureCase>& info) {
  return test::test_name_of(info.param.model);
}

INSTANTIATE_TEST_SUITE_P(Models, RunnerArchitectures,
                         ::testing::Values(ArchitectureCase{"qwen3moe-tiny", Feature::kExperts},
                                           ArchitectureCase{"gemma2-tiny", Feature::kWindows},
                                           ArchitectureCase{"gemma3-tiny", Feature::kWindows},
                                           ArchitectureCase{"gpt-oss-tiny", Feature::kWindows},
                                           ArchitectureCase{"gemma4-dense-tiny", Feature::kWindows},
                                           ArchitectureCase{"gemma4-moe-tiny", Feature::kExperts},
                                           ArchitectureCase{"gemma4-e-tiny", Feature::kWindows},
                                           ArchitectureCase{"qwen35-tiny", Feature::kRecurrent},
                                           ArchitectureCase{"qwen35moe-tiny", Feature::kRecurrent}),
                         case_name);

}  // namespace
}  // namespace vks
