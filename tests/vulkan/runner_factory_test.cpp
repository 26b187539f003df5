// make_runner: Vulkan when a device exists, the CPU reference when forced, clear errors otherwise.
#include <gtest/gtest.h>

#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/runner_factory.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_test_util.h"

namespace vks {
namespace {

RunnerOptions options() {
  RunnerOptions o;
  o.num_blocks = 64;
  o.max_step_tokens = 64;
  o.max_step_seqs = 4;
  return o;
}

TEST(RunnerFactory, ForcedCpuRunsTheReferenceAndAgreesWithVulkan) {
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  RunnerOptions o = options();
  o.force_cpu = true;
  auto cpu = make_runner(*model, o);
  EXPECT_EQ(cpu->device_name(), "cpu");
  EXPECT_EQ(cpu->num_blocks(), 64);
  const auto ref = test::read_id_lines(test::model_path("reference/stories260K_greedy_once_upon_a_time_n64.ids"));
  test::GenerateOptions g;
  g.n_gen = 20;
  test::GreedyDriver cpu_driver(*cpu, 1);
  const auto cpu_ids = cpu_driver.run({ref.at(0)}, g)[0].generated;
  EXPECT_EQ(cpu_ids, std::vector<int32_t>(ref.at(1).begin(), ref.at(1).begin() + 20));
  if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  o.force_cpu = false;
  auto gpu = make_runner(*model, o);
  EXPECT_NE(gpu->device_name(), "cpu");
  EXPECT_EQ(gpu->block_size(), 16);
  EXPECT_EQ(gpu->num_blocks(), 64);
  EXPECT_EQ(gpu->max_step_tokens(), 64);
  EXPECT_EQ(gpu->max_step_seqs(), 4);
  test::GreedyDriver gpu_driver(*gpu, 2);
  EXPECT_EQ(gpu_driver.run({ref.at(0)}, g)[0].generated, cpu_ids);
}

TEST(RunnerFactory, UnknownDeviceSelectorIsNotFound) {
  if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  RunnerOptions o = options();
  o.device = "no-such-device-xyz";
  try {
    make_runner(*model, o);
    FAIL() << "an unknown device selector was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
  }
}

TEST(RunnerFactory, BadOptionsAreInvalidArgument) {
  if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  RunnerOptions o = options();
  o.block_size = 0;
  EXPECT_THROW(make_runner(*model, o), Error);
  o = options();
  o.max_step_seqs = 0;
  EXPECT_THROW(make_runner(*model, o), Error);
}

}  // namespace
}  // namespace vks
