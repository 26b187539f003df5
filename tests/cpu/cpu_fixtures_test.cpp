// The CPU reference on the next-wave fixtures (../shared/models, see its README):
// - the 12 kquant-*.gguf files (K-quants, Q4_1/Q5_0/Q5_1, mixed-type recipes) against a float64
//   forward pass over the dequantized weights (`floatref`): last-prompt logits within 1e-3 of the
//   logits' spread, same 32 greedy ids; llama.cpp's own logits only loosely (it quantizes
//   activations, which moves logits by up to ~0.35);
// - qwen2-tiny.gguf (Q/K/V biases, NEOX rope, tied output), llama3-rope-freqs-tiny.gguf (Llama
//   3.1 rope factors), qwen3moe-tiny and llama-moe-tiny (experts: softmax, top 2, renormalized)
//   and phi3-tiny (fused attn_qkv and gate|up) against llama.cpp: every step's logits within 1e-4,
//   same greedy ids.
// Also: CpuRunner's one-step prefill gives bit-identical logits to CpuModel's token-by-token run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/cpu/cpu_model.h"
#include "engine/cpu/cpu_runner.h"
#include "engine/cpu/reference_ops.h"
#include "engine/model/llama_model.h"
#include "tests/common/test_models.h"
#include "tests/cpu/reference_data.h"

namespace vks {
namespace {

float max_abs_diff(const float* a, const float* b, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

float spread(const std::vector<float>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *hi - *lo;
}

// Runs the prompt token by token and then greedy decoding for n_generate tokens; returns the
// logits after the prompt and after each generated token ([1 + n_generate, vocab]) and the ids.
struct GreedyRun {
  std::vector<std::vector<float>> logits;
  std::vector<int32_t> generated;
};

GreedyRun run_greedy(const LlamaModel& model, const std::vector<int32_t>& prompt, size_t n_generate) {
  CpuModel cpu(model, 2, static_cast<int32_t>(prompt.size() + n_generate + 1));
  GreedyRun run;
  int32_t pos = 0;
  for (const int32_t id : prompt) run.logits.assign(1, cpu.forward(id, pos++));
  while (run.generated.size() < n_generate) {
    const std::vector<float>& last = run.logits.back();
    const int32_t next = ref::argmax(last.data(), last.size());
    run.generated.push_back(next);
    run.logits.push_back(cpu.forward(next, pos++));
  }
  return run;
}

// The prompt as one CpuRunner prefill step; returns its full logits.
std::vector<float> runner_prefill_logits(const LlamaModel& model, const std::vector<int32_t>& prompt) {
  CpuRunnerOptions options;
  options.threads = 2;
  options.num_blocks = 8;
  CpuRunner runner(model, options);
  StepBatch batch;
  batch.tokens = prompt;
  SeqChunk seq;
  seq.n_tokens = static_cast<int32_t>(prompt.size());
  for (int32_t b = 0; b * runner.block_size() < seq.n_tokens; ++b) seq.block_table.push_back(b);
  seq.logits = LogitsMode::kFull;
  batch.seqs.push_back(seq);
  batch.finalize(runner.block_size());
  StepResult result;
  runner.step(batch, result);
  return result.logits;
}

// gtest names allow [A-Za-z0-9_] only.
std::string test_name(const ::testing::TestParamInfo<std::string>& param) {
  std::string s = param.param;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

class KQuantFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(KQuantFixture, MatchesFloatReference) {
  const std::string name = "kquant-" + GetParam();
  const auto model = LlamaModel::load(test::model_path(name + ".gguf"));
  const test::GreedyReference ref = test::load_ids_file(name + ".floatref.greedy.ids");
  const std::vector<float> ref_logits = test::load_f32_file(name + ".floatref.logits.f32");
  const std::vector<float> cpp_logits = test::load_f32_file(name + ".logits.f32");
  const size_t vocab = model->config().vocab_size;
  ASSERT_EQ(ref.prompt, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  ASSERT_EQ(ref.generated.size(), 32u);
  ASSERT_EQ(ref_logits.size(), vocab);
  ASSERT_EQ(cpp_logits.size(), vocab);

  const GreedyRun run = run_greedy(*model, ref.prompt, ref.generated.size());
  const std::vector<float>& logits = run.logits.front();
  const float tolerance = 1e-3f * spread(ref_logits);
  EXPECT_LE(max_abs_diff(logits.data(), ref_logits.data(), vocab), tolerance) << name;
  EXPECT_EQ(run.generated, ref.generated) << name;
  // llama.cpp quantizes activations to 8 bits before each matmul: a loose check only.
  EXPECT_LE(max_abs_diff(logits.data(), cpp_logits.data(), vocab), 0.5f) << name;

  // The serving runner quantizes activations per block as llama.cpp does (engine/cpu/quant): it
  // must land nearer llama.cpp's logits than the float reference does.
  const std::vector<float> served = runner_prefill_logits(*model, ref.prompt);
  const float served_diff = max_abs_diff(served.data(), cpp_logits.data(), vocab);
  const float float_diff = max_abs_diff(logits.data(), cpp_logits.data(), vocab);
  std::printf("%s: max |logit - llama.cpp|: runner %.3g, float reference %.3g\n", name.c_str(), served_diff, float_diff);
  EXPECT_LE(served_diff, 0.5f) << name;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, KQuantFixture,
                         ::testing::Values("q2_k", "q2_k-pure", "q3_k_m", "q3_k-pure", "q4_k_m", "q4_k-pure",
                                           "q5_k_m", "q5_k-pure", "q6_k", "q4_1", "q5_0", "q5_1"),
                         test_name);

class LlamaCppFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppFixture, MatchesLlamaCpp) {
  const std::string name = GetParam();
  const auto model = LlamaModel::load(test::model_path(name + ".gguf"));
  const test::GreedyReference ref = test::load_ids_file(name + ".greedy.ids");
  const std::vector<float> ref_logits = test::load_f32_file(name + ".logits.f32");
  const std::vector<float> gen_logits = test::load_f32_file(name + ".gen_logits.f32");
  const size_t vocab = model->config().vocab_size;
  ASSERT_FALSE(ref.prompt.empty()) << "reference ids not found under " << test::models_dir();
  ASSERT_EQ(ref.generated.size(), 32u);
  ASSERT_EQ(ref_logits.size(), vocab);
  ASSERT_EQ(gen_logits.size(), 32 * vocab);

  const GreedyRun run = run_greedy(*model, ref.prompt, ref.generated.size());
  EXPECT_LE(max_abs_diff(run.logits[0].data(), ref_logits.data(), vocab), 1e-4f) << name;
  EXPECT_EQ(run.generated, ref.generated) << name;
  // Row i of gen_logits: after generated token i was fed in (compared while the ids agree).
  for (size_t i = 0; i + 1 < run.logits.size() && run.generated[i] == ref.generated[i]; ++i) {
    EXPECT_LE(max_abs_diff(run.logits[i + 1].data(), &gen_logits[i * vocab], vocab), 1e-4f) << name << " step " << i;
  }
  EXPECT_EQ(runner_prefill_logits(*model, ref.prompt), run.logits[0]) << name;
}

INSTANTIATE_TEST_SUITE_P(Architectures, LlamaCppFixture,
                         ::testing::Values("qwen2-tiny", "llama3-rope-freqs-tiny", "qwen3moe-tiny", "llama-moe-tiny",
                                           "phi3-tiny"),
                         test_name);

TEST(LlamaCppFixtureModels, DescribeTheirArchitecture) {
  const auto qwen2 = LlamaModel::load(test::model_path("qwen2-tiny.gguf"));
  EXPECT_EQ(qwen2->config().arch, Arch::kQwen2);
  EXPECT_EQ(qwen2->config().rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(qwen2->config().tied_embeddings);
  EXPECT_TRUE(qwen2->weights().layers[2].bv.has_value());
  const auto llama3 = LlamaModel::load(test::model_path("llama3-rope-freqs-tiny.gguf"));
  ASSERT_TRUE(llama3->weights().rope_freqs.has_value());
  EXPECT_EQ(llama3->weights().rope_freqs->cols, 16u);
}

}  // namespace
}  // namespace vks
