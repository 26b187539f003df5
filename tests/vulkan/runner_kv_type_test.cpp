// The Q8_0 KV cache (RunnerOptions::kv_type_k / kv_type_v): batch-invariant like the F16 one,
// within quantization error of it, and refused where a block would straddle two heads (and K and V
// of different types on the CPU backend, which quantizes both or neither).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/runner_factory.h"
#include "engine/vulkan/runner/vulkan_runner.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_reference.h"
#include "tests/vulkan/runner_test_util.h"

namespace vks {
namespace {

namespace fs = std::filesystem;

class RunnerKvType : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (vk::list_devices().empty()) return;
    dir_ = fs::temp_directory_path() / fmt::format("vks_runner_kv_type_{}", ::getpid());
    fs::create_directories(dir_);
    // head_dim 32 (one Q8_0 block a head), GQA 2:1, Q8_0 weights.
    const std::string tool = test::build_dir() + "/tools/vks-make-model";
    path_ = (dir_ / "kv32.gguf").string();
    const std::string cmd = fmt::format("'{}' -q -o '{}' -p tiny -t q8_0 --dim 128 --heads 4 --kv-heads 2 --hidden 256 "
                                        "--vocab 300 --layers 2 --seed 9",
                                        tool, path_);
    if (std::system(cmd.c_str()) != 0) path_.clear();
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    ASSERT_FALSE(path_.empty()) << "vks-make-model failed: build the vks-make-model target";
    model_ = LlamaModel::load(path_);
  }

  std::unique_ptr<VulkanRunner> runner(KvType k, KvType v) const {
    RunnerOptions o;
    o.num_blocks = 64;
    o.block_size = 16;
    o.max_step_tokens = 96;
    o.max_step_seqs = 8;
    o.kv_type_k = k;
    o.kv_type_v = v;
    return std::make_unique<VulkanRunner>(*model_, o);
  }

  // Prompts of one token, of a block and a half, and past one 128-key attention split.
  static std::vector<std::vector<int32_t>> prompts() {
    return {test::random_prompt(1, 11, 300), test::random_prompt(24, 12, 300), test::random_prompt(150, 13, 300)};
  }

  static inline fs::path dir_;
  static inline std::string path_;
  std::unique_ptr<LlamaModel> model_;
};

TEST_F(RunnerKvType, Q8CacheIsBatchInvariantAndCloseToF16) {
  auto q8 = runner(KvType::kQ8_0, KvType::kQ8_0);
  auto f16 = runner(KvType::kF16, KvType::kF16);
  EXPECT_EQ(q8->kv_type(), "q8_0");
  EXPECT_EQ(f16->kv_type(), "f16");
  // kv_dim 64: 2 layers x (K + V) x (64 int8 + 2 f32 scales) against 2 x 2 x 128 bytes.
  EXPECT_EQ(q8->kv_bytes_per_token(), 2u * 2 * (64 + 8));
  EXPECT_EQ(f16->kv_bytes_per_token(), 2u * 2 * 128);
  const auto ps = prompts();
  const auto with_q8 = test::expect_batched_equals_alone(*q8, ps, 8, 5);
  test::expect_chunked_equals_whole(*q8, {ps[1]}, 4, 9);
  test::GreedyDriver driver(*f16, 5);
  test::GenerateOptions g;
  g.n_gen = 8;
  g.full_logits = true;
  for (size_t i = 0; i < ps.size(); ++i) {
    const test::SeqResult with_f16 = driver.run({ps[i]}, g)[0];
    ASSERT_EQ(with_f16.logits.size(), with_q8[i].logits.size());
    // The first row depends on the prompt's keys alone; compare it (later rows follow tokens that
    // may differ once the two caches pick different ones).
    const double err = test::normalized_error(with_q8[i].logits[0], with_f16.logits[0]);
    std::printf("prompt %zu (%zu tokens): Q8_0 KV logits vs F16 KV, normalized error %.3g\n", i, ps[i].size(), err);
    EXPECT_LT(err, 2e-2) << "prompt " << i;
    if (ps[i].size() > 1) {  // one token attends to itself alone: the weights sum to 1 whatever K is
      EXPECT_NE(std::memcmp(with_q8[i].logits[0].data(), with_f16.logits[0].data(), with_f16.logits[0].size() * 4), 0)
          << "prompt " << i << ": the Q8_0 cache gave the F16 cache's bits: was it used?";
    }
  }
}

TEST_F(RunnerKvType, KeysAloneQuantizedStayBatchInvariant) {
  auto mixed = runner(KvType::kQ8_0, KvType::kF16);
  EXPECT_EQ(mixed->kv_type(), "q8_0/f16");
  EXPECT_EQ(mixed->kv_bytes_per_token(), 2u * (64 + 8 + 128));
  test::expect_batched_equals_alone(*mixed, prompts(), 4, 7);
}

TEST_F(RunnerKvType, RefusedWhereABlockWouldStraddleHeadsAndMixedOnTheCpuBackend) {
  const auto stories = LlamaModel::load(test::model_path("stories260K.gguf"));  // head_dim 8
  RunnerOptions o;
  o.num_blocks = 16;
  o.kv_type_v = KvType::kQ8_0;
  try {
    VulkanRunner r(*stories, o);
    FAIL() << "a Q8_0 cache of head_dim 8 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("multiples of 32"), std::string::npos) << e.what();
  }
  RunnerOptions cpu;
  cpu.force_cpu = true;
  cpu.kv_type_k = KvType::kQ8_0;
  try {
    make_runner(*model_, cpu);
    FAIL() << "the CPU backend accepted Q8_0 keys beside F32 values";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("--vulkan"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vks
