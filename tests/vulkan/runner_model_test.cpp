// The whole Vulkan forward pass against the CPU reference model, and greedy generation against
// the llama2.c reference ids for stories260K.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <utility>

#include "engine/common/error.h"
#include "engine/cpu/cpu_model.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/vulkan_runner.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_reference.h"
#include "tests/vulkan/runner_test_util.h"

namespace vks {
namespace {

RunnerOptions small_options() {
  RunnerOptions o;
  o.num_blocks = 256;
  o.max_step_tokens = 128;
  o.max_step_seqs = 16;
  return o;
}

std::vector<std::vector<int32_t>> reference_ids() {
  return test::read_id_lines(test::model_path("reference/stories260K_greedy_once_upon_a_time_n64.ids"));
}

class RunnerModel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  }
};

// Logits of the CPU reference for every position after prompt[0..i], i >= from.
std::vector<std::vector<float>> cpu_logits(const LlamaModel& model, const std::vector<int32_t>& tokens, size_t from) {
  CpuModel cpu(model, 1);
  std::vector<std::vector<float>> rows;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::vector<float>& l = cpu.forward(tokens[i], static_cast<int32_t>(i));
    if (i >= from) rows.push_back(l);
  }
  return rows;
}

void expect_logits_close(const LlamaModel& model, double tolerance) {
  VulkanRunner runner(model, small_options());
  const std::vector<int32_t> prompt = reference_ids().at(0);
  test::GreedyDriver driver(runner, 7);
  test::GenerateOptions o;
  o.n_gen = 12;
  o.full_logits = true;
  const test::SeqResult r = driver.run({prompt}, o)[0];
  ASSERT_EQ(r.logits.size(), 12u);
  // The CPU model follows the same tokens: prompt then the runner's own greedy choices.
  std::vector<int32_t> tokens = prompt;
  tokens.insert(tokens.end(), r.generated.begin(), r.generated.end() - 1);
  const auto want = cpu_logits(model, tokens, prompt.size() - 1);
  ASSERT_EQ(want.size(), r.logits.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_LT(test::normalized_error(r.logits[i], want[i]), tolerance) << "step " << i;
  }
}

TEST_F(RunnerModel, Stories260KLogitsMatchCpuModel) {
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  expect_logits_close(*model, 2e-3);
}

TEST_F(RunnerModel, Stories260KLogitsMatchLlama2cReference) {
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  VulkanRunner runner(*model, small_options());
  std::ifstream in(test::model_path("reference/stories260K_once_upon_a_time.step_logits.f32"), std::ios::binary);
  std::vector<float> want(512);
  in.read(reinterpret_cast<char*>(want.data()), 512 * sizeof(float));
  ASSERT_TRUE(in) << "cannot read the reference logits";
  test::GreedyDriver driver(runner, 3);
  test::GenerateOptions o;
  o.n_gen = 1;
  o.full_logits = true;
  const test::SeqResult r = driver.run({reference_ids().at(0)}, o)[0];
  ASSERT_EQ(r.logits.size(), 1u);
  EXPECT_LT(test::normalized_error(r.logits[0], want), 2e-3);
  double max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i) max_diff = std::max(max_diff, std::fabs(double{r.logits[0][i]} - want[i]));
  EXPECT_LT(max_diff, 2e-2);  // F16 KV cache: looser than the CPU reference's 1e-4
}

TEST_F(RunnerModel, Stories260KGreedyIdsEqualReference) {
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  VulkanRunner runner(*model, small_options());
  const auto ref = reference_ids();
  ASSERT_EQ(ref.size(), 2u);
  test::GreedyDriver driver(runner, 11);
  test::GenerateOptions o;
  o.n_gen = static_cast<int>(ref[1].size());
  EXPECT_EQ(driver.run({ref[0]}, o)[0].generated, ref[1]);
  EXPECT_GT(runner.last_dispatch_count(), 0u);
}

TEST_F(RunnerModel, MatrixKernelsAreTheOptionsThenTheEnvironmentsThenTheDevices) {
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  // Unset: VKSTREAM_MATMUL_KERNELS if set (ctest's vks_vulkan_runner_lanes_tests sets "lanes"),
  // else the device's own.
  const char* env = std::getenv("VKSTREAM_MATMUL_KERNELS");
  {
    VulkanRunner runner(*model, small_options());
    const vk::DeviceInfo info = vk::list_devices().at(vk::select_device(vk::list_devices(), ""));
    EXPECT_EQ(runner.matmul_family(), vk::choose_matmul_family(info, env != nullptr ? env : ""));
    if (env != nullptr && std::string(env) == "lanes") {
      EXPECT_EQ(runner.matmul_family(), vk::MatmulFamily::kLanes);
    }
  }
  for (const auto& [name, family] : {std::pair{"rows", vk::MatmulFamily::kRows}, std::pair{"lanes", vk::MatmulFamily::kLanes}}) {
    RunnerOptions o = small_options();
    o.matmul_kernels = name;
    VulkanRunner runner(*model, o);
    EXPECT_EQ(runner.matmul_family(), family) << name;
  }
  {
    // "dot" where the device has integer dot products, a clear refusal where it has not.
    RunnerOptions o = small_options();
    o.matmul_kernels = "dot";
    const vk::DeviceInfo info = vk::list_devices().at(vk::select_device(vk::list_devices(), ""));
    if (info.integer_dot) {
      EXPECT_EQ(VulkanRunner(*model, o).matmul_family(), vk::MatmulFamily::kDot);
    } else {
      try {
        VulkanRunner runner(*model, o);
        FAIL() << "matmul_kernels 'dot' was accepted without integer dot products";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      }
    }
  }
  RunnerOptions bad = small_options();
  bad.matmul_kernels = "columns";
  try {
    VulkanRunner runner(*model, bad);
    FAIL() << "matmul_kernels 'columns' was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("columns"), std::string::npos) << e.what();
  }
}

TEST_F(RunnerModel, DefaultOptionsGreedyIdsEqualReference) {
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  VulkanRunner runner(*model, RunnerOptions{});
  const auto ref = reference_ids();
  test::GreedyDriver driver(runner, 13);
  test::GenerateOptions o;
  o.n_gen = static_cast<int>(ref[1].size());
  EXPECT_EQ(driver.run({ref[0]}, o)[0].generated, ref[1]);
}

TEST_F(RunnerModel, RejectsInvalidBatchesAndKeepsWorking) {
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  VulkanRunner runner(*model, small_options());
  StepBatch b;
  b.tokens = {1, 403};
  SeqChunk c;
  c.token_offset = 0;
  c.n_tokens = 2;
  c.block_table = {runner.num_blocks()};  // outside the pool
  c.logits = LogitsMode::kArgmax;
  b.seqs = {c};
  b.positions = {0, 1};
  b.slot_mapping = {0, 1};
  StepResult r;
  try {
    runner.step(b, r);
    FAIL() << "a block outside the pool was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("out of the pool"), std::string::npos) << e.what();
  }
  b.seqs[0].block_table = {0};
  b.tokens[1] = 100000;  // outside the vocabulary
  b.finalize(runner.block_size());
  EXPECT_THROW(runner.step(b, r), Error);
  b.tokens[1] = 403;
  runner.step(b, r);
  ASSERT_EQ(r.argmax.size(), 1u);
  EXPECT_GE(r.argmax[0], 0);
}

}  // namespace
}  // namespace vks
