// Experts in host memory on the Vulkan runner (RunnerOptions::cpu_expert_layers, llama.cpp's
// --n-cpu-moe): which layers split_experts leaves on the host, by count and by a device budget, and
// the refusal of what does not fit at all; then every MoE fixture with the experts of its first
// layer and of all its layers on the CPU against llama.cpp's (or the float64 pass's) logits and
// greedy ids, with the tolerance of runner_fixtures_test.cpp (wider for gpt-oss's MXFP4 experts on
// the CPU: they quantize activations), batched = alone and chunked = whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <ostream>
#include <string>

#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/device_weights.h"
#include "engine/vulkan/runner/expert_kernels.h"
#include "engine/vulkan/runner/expert_plan.h"
#include "engine/vulkan/runner/expert_split.h"
#include "engine/vulkan/runner/vulkan_runner.h"
#include "engine/vulkan/shaders/shader_params.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/cpu/reference_data.h"
#include "tests/vulkan/runner_test_util.h"

namespace vks {
namespace {

// Four layers: 100 bytes of fixed weights, experts of 40, 0 (dense), 30 and 20 bytes.
vk::WeightFootprint toy_footprint() {
  vk::WeightFootprint f;
  f.fixed_bytes = 100;
  f.fixed_buffers = 10;
  f.expert_bytes = {40, 0, 30, 20};
  f.expert_buffers = {2, 0, 2, 2};
  return f;
}

TEST(ExpertSplit, CountsTheFirstExpertLayers) {
  const vk::ExpertSplit none = vk::split_experts(toy_footprint(), 0, 0, "dev");
  EXPECT_EQ(none.host_layers, 0u);
  EXPECT_EQ(none.expert_layers, 3u);
  EXPECT_EQ(none.device_bytes, 190u);
  EXPECT_EQ(none.device_buffers, 16u);
  EXPECT_FALSE(none.any_on_host());
  const vk::ExpertSplit two = vk::split_experts(toy_footprint(), 2, 0, "dev");
  EXPECT_EQ(two.on_host, (std::vector<bool>{true, false, true, false}));  // the dense layer is not counted
  EXPECT_EQ(two.host_bytes, 70u);
  EXPECT_EQ(two.device_bytes, 120u);
  EXPECT_EQ(two.device_buffers, 12u);
  const vk::ExpertSplit all = vk::split_experts(toy_footprint(), 99, 0, "dev");
  EXPECT_EQ(all.host_layers, 3u);
  EXPECT_EQ(all.device_bytes, 100u);
  EXPECT_EQ(all.host_bytes, 90u);
}

TEST(ExpertSplit, AutomaticTakesTheFewestLayersThatFit) {
  EXPECT_EQ(vk::split_experts(toy_footprint(), -1, 0, "dev").host_layers, 0u);    // no limit
  EXPECT_EQ(vk::split_experts(toy_footprint(), -1, 190, "dev").host_layers, 0u);  // fits exactly
  EXPECT_EQ(vk::split_experts(toy_footprint(), -1, 189, "dev").host_layers, 1u);
  EXPECT_EQ(vk::split_experts(toy_footprint(), -1, 150, "dev").host_layers, 1u);
  EXPECT_EQ(vk::split_experts(toy_footprint(), -1, 149, "dev").host_layers, 2u);
  EXPECT_EQ(vk::split_experts(toy_footprint(), -1, 100, "dev").host_layers, 3u);
}

TEST(ExpertSplit, RefusesWhatDoesNotFitWithTheSizes) {
  try {
    vk::split_experts(toy_footprint(), -1, 99, "tiny GPU");
    FAIL() << "100 bytes of fixed weights accepted in 99";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    const std::string m = e.what();
    EXPECT_NE(m.find("tiny GPU"), std::string::npos) << m;
    EXPECT_NE(m.find("even with every expert layer"), std::string::npos) << m;
  }
  try {
    vk::split_experts(toy_footprint(), 1, 149, "tiny GPU");  // fits with 2, not with the 1 asked for
    FAIL() << "a count that does not fit accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("keep more layers' experts on the CPU"), std::string::npos) << e.what();
  }
  EXPECT_THROW(vk::split_experts(toy_footprint(), -2, 0, "dev"), Error);
}

class CpuExpertsRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  }
};

RunnerOptions small_options() {
  RunnerOptions o;
  o.num_blocks = 64;
  o.max_step_tokens = 64;
  o.max_step_seqs = 4;
  return o;
}

// A device budget that holds every weight but the first `host` expert layers' experts: the
// automatic split must put exactly those on the host, and each step submits once more per layer.
TEST_F(CpuExpertsRunner, ASmallDeviceBudgetSplitsAutomaticallyOrRefuses) {
  auto model = LlamaModel::load(test::model_path("qwen3moe-tiny.gguf"));
  vk::WeightFootprint f;
  {
    vk::Device device = vk::Device::create();
    f = vk::weight_footprint(device, *model);
  }
  ASSERT_EQ(f.expert_bytes.size(), 2u);
  ASSERT_GT(f.expert_bytes[0], 0u);
  const uint64_t total = f.fixed_bytes + f.expert_bytes[0] + f.expert_bytes[1];
  RunnerOptions o = small_options();
  o.device_weight_budget = total - f.expert_bytes[0];
  VulkanRunner runner(*model, o);
  EXPECT_EQ(runner.expert_split().host_layers, 1u);
  EXPECT_EQ(runner.expert_split().on_host, (std::vector<bool>{true, false}));
  EXPECT_EQ(runner.expert_split().host_bytes, f.expert_bytes[0]);
  test::GreedyDriver driver(runner, 3);
  test::GenerateOptions g;
  g.n_gen = 2;
  driver.run({test::random_prompt(9, 1, model->config().vocab_size)}, g);
  EXPECT_EQ(runner.last_submit_count(), 2u);

  o.device_weight_budget = total - f.expert_bytes[0] - 1;  // the second layer's experts must go too
  EXPECT_EQ(VulkanRunner(*model, o).expert_split().host_layers, 2u);

  o.device_weight_budget = f.fixed_bytes - 1;  // not even without experts
  try {
    VulkanRunner refused(*model, o);
    FAIL() << "weights larger than the budget accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("MiB"), std::string::npos) << e.what();
  }
}

TEST_F(CpuExpertsRunner, AllOnTheDeviceIsOneSubmit) {
  auto model = LlamaModel::load(test::model_path("qwen3moe-tiny.gguf"));
  RunnerOptions o = small_options();
  VulkanRunner runner(*model, o);  // automatic: the tiny model fits
  EXPECT_FALSE(runner.expert_split().any_on_host());
  test::GreedyDriver driver(runner, 3);
  test::GenerateOptions g;
  g.n_gen = 2;
  driver.run({test::random_prompt(9, 1, model->config().vocab_size)}, g);
  EXPECT_EQ(runner.last_submit_count(), 1u);
}

// The device's routing limits (lavapipe's loop budget over a step's routed choices) bind only the
// layers that route on the device: a step too wide for them is refused with every expert on the
// device and accepted with every expert layer on the CPU, which routes there.
TEST_F(CpuExpertsRunner, RoutingLimitsBindOnlyTheLayersRoutedOnTheDevice) {
  auto model = LlamaModel::load(test::model_path("qwen3moe-tiny.gguf"));
  const FfnSpec& ffn = model->config().layers[0].ffn;
  ASSERT_TRUE(ffn.routed());
  RunnerOptions o = small_options();
  // The fewest step tokens whose routed choices exceed the plan kernel's loop budget.
  o.max_step_tokens = 64;
  while (vk::moe_plan_loop_iterations(static_cast<uint32_t>(o.max_step_tokens) * ffn.n_used, ffn.n_experts,
                                      vk::expert_plan_max_groups(static_cast<uint32_t>(o.max_step_tokens), ffn)) <=
         VKS_LAVAPIPE_LOOP_BUDGET) {
    o.max_step_tokens *= 2;
  }
  o.cpu_expert_layers = 0;
  try {
    VulkanRunner refused(*model, o);
    FAIL() << "a step of " << o.max_step_tokens << " tokens routed on the device accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("routing"), std::string::npos) << e.what();
  }
  o.cpu_expert_layers = vk::parse_cpu_expert_layers("all");
  VulkanRunner runner(*model, o);
  EXPECT_EQ(runner.expert_split().host_layers, runner.expert_split().expert_layers);
  test::GreedyDriver driver(runner, 3);
  test::GenerateOptions g;
  g.n_gen = 2;
  driver.run({test::random_prompt(9, 1, model->config().vocab_size)}, g);
  EXPECT_EQ(runner.last_submit_count(), 1u + runner.expert_split().host_layers);
}

struct ExpertsFixture {
  std::string model;      // file in the models folder
  std::string reference;  // reference/<reference>.{logits.f32,greedy.ids}
  int32_t cpu_layers;     // RunnerOptions::cpu_expert_layers
  // The logits' bound against the reference, in its standard deviations (expect_logits_near_reference).
  double ratio = 3e-3;
};

void PrintTo(const ExpertsFixture& f, std::ostream* os) { *os << f.model << " cpu_expert_layers " << f.cpu_layers; }

std::string experts_fixture_name(const ::testing::TestParamInfo<ExpertsFixture>& info) {
  return test::test_name_of(info.param.reference + "_cpu" + std::to_string(info.param.cpu_layers));
}

class CpuExpertsFixtures : public ::testing::TestWithParam<ExpertsFixture> {
 protected:
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  }
};

TEST_P(CpuExpertsFixtures, MatchTheReferenceAndStayBatchInvariant) {
  const ExpertsFixture& f = GetParam();
  auto model = LlamaModel::load(test::model_path(f.model));
  RunnerOptions o = small_options();
  o.cpu_expert_layers = f.cpu_layers;
  VulkanRunner runner(*model, o);
  uint32_t expert_layers = 0;
  for (const LayerSpec& l : model->config().layers) expert_layers += l.ffn.routed() ? 1 : 0;
  ASSERT_EQ(runner.expert_split().host_layers, std::min<uint32_t>(expert_layers, f.cpu_layers));

  const test::GreedyReference ids = test::load_ids_file(f.reference + ".greedy.ids");
  ASSERT_FALSE(ids.prompt.empty() || ids.generated.empty()) << "prompt line and generated line expected";
  const uint32_t vocab = model->config().vocab_size;
  const std::vector<float> want = test::load_f32_file(f.reference + ".logits.f32");
  ASSERT_EQ(want.size(), vocab) << "cannot read the reference logits";
  test::GreedyDriver driver(runner, 5);
  test::GenerateOptions g;
  g.n_gen = 32;
  g.full_logits = true;
  const test::SeqResult r = driver.run({ids.prompt}, g)[0];
  EXPECT_EQ(runner.last_submit_count(), 1u + runner.expert_split().host_layers);
  ASSERT_FALSE(r.logits.empty());
  test::expect_logits_near_reference(r.logits[0], want,
                                     f.reference + ", " + std::to_string(f.cpu_layers) + " layers' experts on the CPU",
                                     f.ratio);
  for (size_t i = 0; i < 32; ++i) ASSERT_EQ(r.generated.at(i), ids.generated.at(i)) << f.model << " step " << i;

  const std::vector<std::vector<int32_t>> prompts{ids.prompt, test::random_prompt(13, 7, vocab),
                                                  test::random_prompt(5, 8, vocab)};
  test::expect_batched_equals_alone(runner, prompts, 6, 11);
  test::expect_chunked_equals_whole(runner, prompts, 4, 21);
}

INSTANTIATE_TEST_SUITE_P(
    Models, CpuExpertsFixtures,
    ::testing::Values(ExpertsFixture{"qwen3moe-tiny.gguf", "qwen3moe-tiny", 1}, ExpertsFixture{"qwen3moe-tiny.gguf", "qwen3moe-tiny", 99},
                      ExpertsFixture{"llama-moe-tiny.gguf", "llama-moe-tiny", 1},
                      ExpertsFixture{"llama-moe-tiny.gguf", "llama-moe-tiny", 99},
                      // Biased MXFP4 experts, a biased router, top-k then softmax. On the CPU the
                      // MXFP4 products quantize their activations to Q8_0, as llama.cpp's do (up to
                      // 0.145 from the float64 pass there, 0.037 of its deviation): 0.012 and 0.021
                      // measured here with one layer's and both layers' experts on the CPU.
                      ExpertsFixture{"gpt-oss-tiny.gguf", "gpt-oss-tiny.floatref", 1, 0.03},
                      ExpertsFixture{"gpt-oss-tiny.gguf", "gpt-oss-tiny.floatref", 99, 0.03},
                      // A dense MLP beside the experts, split norms, the scaled-norm router, expert scales.
                      ExpertsFixture{"gemma4-moe-tiny.gguf", "gemma4-moe-tiny.floatref", 1},
                      ExpertsFixture{"gemma4-moe-tiny.gguf", "gemma4-moe-tiny.floatref", 99},
                      // Gated DeltaNet layers; a sigmoid-gated shared expert.
                      ExpertsFixture{"qwen35moe-tiny.gguf", "qwen35moe-tiny", 1},
                      ExpertsFixture{"qwen35moe-tiny.gguf", "qwen35moe-tiny", 99}),
    experts_fixture_name);

}  // namespace
}  // namespace vks
