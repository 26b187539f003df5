// A whole model with the shaders' integer half conversions (halves.glsl; what aarch64 lavapipe runs)
// gives the logits of unpackHalf2x16: F16 weights and embeddings, Q4_K scales, and the F16 KV cache
// that every attention reads. VKSTREAM_HALVES_BY_INTEGER_STEPS picks the conversion; a bad value is
// a startup error that names it.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/vulkan_runner.h"
#include "tests/common/scoped_env.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_test_util.h"
#include "tests/vulkan/synthetic_models.h"

namespace vks {
namespace {

constexpr const char* kHalvesEnv = "VKSTREAM_HALVES_BY_INTEGER_STEPS";

class RunnerHalves : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (vk::list_devices().empty()) return;
    models_ = std::make_unique<test::SyntheticModels>("runner_halves");
    // F16 matrices and embeddings, a Q4_K output (half d and dmin), 2 layers of F16 KV.
    path_ = models_->make("halves", "-t f16 --output-type q4_K --dim 128 --heads 4 --kv-heads 2 --hidden 256 "
                                    "--vocab 300 --layers 2 --seed 21");
  }
  static void TearDownTestSuite() { models_.reset(); }
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    ASSERT_FALSE(path_.empty()) << "vks-make-model failed: build the vks-make-model target";
    model_ = LlamaModel::load(path_);
  }

  std::unique_ptr<VulkanRunner> runner() const {
    RunnerOptions o;
    o.num_blocks = 32;
    o.block_size = 16;
    o.max_step_tokens = 64;
    o.max_step_seqs = 4;
    return std::make_unique<VulkanRunner>(*model_, o);
  }

  static inline std::unique_ptr<test::SyntheticModels> models_;
  static inline std::string path_;
  std::unique_ptr<LlamaModel> model_;
};

TEST_F(RunnerHalves, IntegerStepsGiveTheLogitsOfUnpackHalf2x16) {
  const std::vector<vk::DeviceInfo> devices = vk::list_devices();
  if (devices[vk::select_device(devices, vk::device_selector(""))].halves_by_integer_steps) {
    GTEST_SKIP() << "this device's unpackHalf2x16 is wrong: only the integer steps run here";
  }
  std::unique_ptr<VulkanRunner> unpacking, stepping;
  {
    const test::ScopedEnv env(kHalvesEnv, "0");
    unpacking = runner();
  }
  {
    const test::ScopedEnv env(kHalvesEnv, "1");
    stepping = runner();
  }
  // One token, and one past the first 128-key attention split.
  const std::vector<std::vector<int32_t>> prompts = {test::random_prompt(1, 3, 300), test::random_prompt(140, 4, 300)};
  test::GenerateOptions g;
  g.n_gen = 4;
  g.full_logits = true;
  test::GreedyDriver with_unpack(*unpacking, 5), with_integer_steps(*stepping, 5);
  test::expect_same_results(with_unpack.run(prompts, g), with_integer_steps.run(prompts, g));
}

TEST_F(RunnerHalves, ABadSettingIsAStartupErrorThatNamesIt) {
  const test::ScopedEnv env(kHalvesEnv, "yes");
  try {
    runner();
    FAIL() << "VKSTREAM_HALVES_BY_INTEGER_STEPS=yes was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("VKSTREAM_HALVES_BY_INTEGER_STEPS"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vks
