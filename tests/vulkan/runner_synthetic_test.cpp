// The Vulkan forward pass against the CPU reference on synthetic models (made by vks-make-model)
// with quantized and half-precision weights and awkward shapes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <fmt/format.h>

#include "engine/common/error.h"
#include "engine/cpu/cpu_model.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/attn_kernels.h"
#include "engine/vulkan/runner/vulkan_runner.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_reference.h"
#include "tests/vulkan/runner_test_util.h"
#include "tests/vulkan/synthetic_models.h"

namespace vks {
namespace {

class RunnerSynthetic : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    models_ = std::make_unique<test::SyntheticModels>("runner_synthetic");
  }
  void TearDown() override { models_.reset(); }

  // A synthetic model of the "tiny" preset reshaped to awkward sizes: head_dim 16 with GQA 3:1,
  // hidden 224 (or the N of a "type:N" parameter), vocab 300, untied output, llama-3 rope base.
  std::string make_model(const std::string& param) {
    const size_t colon = param.find(':');
    const std::string type = param.substr(0, colon);
    const std::string hidden = colon == std::string::npos ? "224" : param.substr(colon + 1);
    return make_model_with(type + "_" + hidden, fmt::format("-t {} --dim 96 --heads 6 --kv-heads 2 --hidden {} --vocab 300 "
                                                            "--layers 3 --untied --rope-base 500000 --seed 5",
                                                            type, hidden));
  }

  // vks-make-model -p tiny with these flags, as <name>.gguf.
  std::string make_model_with(const std::string& name, const std::string& flags) {
    const std::string path = models_->make(name, flags);
    EXPECT_FALSE(path.empty()) << "vks-make-model -p tiny " << flags << " failed: build the vks-make-model target";
    return path;
  }

  std::unique_ptr<test::SyntheticModels> models_;
};

// The runner's logits over a prompt and 6 greedy steps against the CPU model's (matmul_kernels:
// RunnerOptions'; tolerance: the normalized error allowed each step).
void expect_runner_matches_cpu_model(const std::string& path, const std::string& label,
                                     const std::string& matmul_kernels = "", double tolerance = 5e-3) {
  auto model = LlamaModel::load(path);
  RunnerOptions o;
  o.num_blocks = 64;
  o.max_step_tokens = 64;
  o.max_step_seqs = 4;
  o.matmul_kernels = matmul_kernels;
  VulkanRunner runner(*model, o);
  const std::vector<int32_t> prompt{1, 17, 250, 3, 99, 42, 7, 180, 5, 64, 33};
  test::GreedyDriver driver(runner, 3);
  test::GenerateOptions g;
  g.n_gen = 6;
  g.full_logits = true;
  const test::SeqResult r = driver.run({prompt}, g)[0];
  ASSERT_EQ(r.logits.size(), 6u);

  CpuModel cpu(*model, 1);
  std::vector<int32_t> tokens = prompt;
  tokens.insert(tokens.end(), r.generated.begin(), r.generated.end() - 1);
  size_t row = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::vector<float>& want = cpu.forward(tokens[i], static_cast<int32_t>(i));
    if (i + 1 < prompt.size()) continue;
    EXPECT_LT(test::normalized_error(r.logits[row], want), tolerance) << label << " step " << row;
    ++row;
  }
}

TEST_P(RunnerSynthetic, LogitsMatchCpuModel) { expect_runner_matches_cpu_model(make_model(GetParam()), GetParam()); }

// The int8 dot-product kernels end to end (Ops' MatmulFamily::kDot; lavapipe has integer dot
// products): logits near the CPU model's, and a sequence's logits the same bits batched, chunked or
// alone. x's int8 rounding in every product of these random-weight models moves the logits by
// 1.3-3.1% (normalized, measured on lavapipe: every step of both models), against 5e-3 for the
// float families; each product's rounding alone is checked to 1e-5 by the kernel tests.
TEST_F(RunnerSynthetic, DotKernelsMatchCpuModelAndAreBatchInvariant) {
  if (!vk::list_devices().at(vk::select_device(vk::list_devices(), "")).integer_dot) {
    GTEST_SKIP() << "the device has no integer dot products";
  }
  for (const char* type : {"q8_0", "iq4_nl"}) expect_runner_matches_cpu_model(make_model(type), type, "dot", 5e-2);
  auto model = LlamaModel::load(make_model("q4_0"));
  RunnerOptions o;
  o.num_blocks = 128;
  o.max_step_tokens = 64;
  o.max_step_seqs = 8;
  o.matmul_kernels = "dot";
  VulkanRunner runner(*model, o);
  ASSERT_EQ(runner.matmul_family(), vk::MatmulFamily::kDot);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; ++i) prompts.push_back(test::random_prompt(2 + 5 * i, 40 + static_cast<uint32_t>(i), 300));
  const auto alone = test::expect_batched_equals_alone(runner, prompts, 8, 2);
  EXPECT_NE(alone[0].generated, alone[5].generated);
  test::GenerateOptions g;
  g.n_gen = 6;
  g.full_logits = true;
  test::GreedyDriver whole(runner, 5);
  const auto in_one = whole.run({prompts[5]}, g);
  g.chunk = 4;
  test::GreedyDriver chunked(runner, 6);
  test::expect_same_results(in_one, chunked.run({prompts[5]}, g));
}

// Q, K, V of different types are separate products writing into one q|k|v row at their offsets,
// which must be 16-byte aligned: a model where they are not is refused, whatever its first layer
// holds (head_dim 6 and one kv head make kv_dim 6; the q4_k_m recipe's fallbacks give layer 0
// Q5_0 throughout and layer 1, a more-bits layer, its V in Q8_0).
TEST_F(RunnerSynthetic, RefusesQkvOfMixedTypesWhoseRowsWouldMisalign) {
  const std::string path = make_model_with("mixed_qkv", "-t q4_k_m --dim 96 --heads 16 --kv-heads 1 --hidden 512 "
                                                        "--vocab 300 --layers 2");
  auto model = LlamaModel::load(path);
  ASSERT_EQ(model->weights().layers[0].wv.type, model->weights().layers[0].wq.type);
  ASSERT_NE(model->weights().layers[1].wv.type, model->weights().layers[1].wq.type);
  RunnerOptions o;
  o.num_blocks = 16;
  try {
    VulkanRunner runner(*model, o);
    FAIL() << "a layer-1 q|k|v split at kv_dim 6 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("multiples of 4"), std::string::npos) << e.what();
  }
}

// qwen2 (Q/K/V biases, NEOX rope) and qwen3 (per-head Q/K RMSNorm) at the same awkward sizes. The CPU
// model's qwen3 is checked against llama.cpp in tests/tools/llama_cpp_crosscheck_test.cpp.
TEST_F(RunnerSynthetic, QwenArchitecturesMatchCpuModel) {
  for (const char* arch : {"qwen2", "qwen3"}) {
    const std::string path =
        make_model_with(arch, fmt::format("-t q8_0 --arch {} --dim 96 --heads 6 --kv-heads 2 --hidden 224 --vocab 300 "
                                          "--layers 3 --seed 5",
                                          arch));
    expect_runner_matches_cpu_model(path, arch);
  }
}

// "f32:222": with hidden 222 the gate and up rows cannot be stacked 16-byte aligned, so the runner's
// separate gate/up path runs.
INSTANTIATE_TEST_SUITE_P(WeightTypes, RunnerSynthetic, ::testing::Values("q8_0", "q4_0", "f16", "f32:222", "iq4_nl"));

// lavapipe's loop budget bounds how many keys attention reaches (attention_max_keys): on a CPU
// device a model with a longer context is served with the context capped there, and the runner's
// config says so, so the engine refuses longer requests up front. Elsewhere the model's context stands.
TEST_F(RunnerSynthetic, ContextIsCappedWhereAttentionCannotReach) {
  const std::string path = make_model_with(
      "long_context", "-t f32 --dim 128 --heads 2 --kv-heads 1 --hidden 128 --vocab 300 --layers 1 --context 200000");
  ASSERT_FALSE(HasFailure());
  auto model = LlamaModel::load(path);
  ASSERT_EQ(model->config().head_dim, 64u);
  RunnerOptions o;
  o.num_blocks = 13000;  // 208,000 tokens: the pool does not limit the context
  o.max_step_tokens = 64;
  o.max_step_seqs = 2;
  VulkanRunner runner(*model, o);
  const bool cpu_device = runner.device_info().type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  const uint32_t expected = cpu_device ? static_cast<uint32_t>(vk::attention_max_keys(64, runner.matmul_family(),
                                                                                runner.attention_split_keys()))
                                    : 200000u;
  EXPECT_EQ(runner.config().context_length, expected) << runner.device_name() << ", " << runner.num_blocks() << " blocks of " << runner.block_size();
  EXPECT_EQ(model->config().context_length, 200000u);  // the model itself is unchanged
}

}  // namespace
}  // namespace vks
