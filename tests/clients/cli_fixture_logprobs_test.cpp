// What a user runs on the shared fixtures (../shared/models README): `vkstreamd --model FILE` on the
// CPU backend and on Vulkan, then `vkstream generate --json --logprobs 20 -t 0 PROMPT`. The first
// token's 20 log-probabilities must be the reference logits' log-softmax: on Vulkan (float
// activations) the float64 forward pass over the dequantized weights (`floatref`) for the kquant
// files; on the CPU backend, which quantizes activations per block as llama.cpp does, llama.cpp's
// own logits for the K-quant files it reproduces (to ~6e-6; not Q4_1/Q5_0/Q5_1 and the pure Q4_K
// file, 0.14-0.20 away: see cpu_fixtures_test); llama.cpp for qwen2-tiny and
// llama3-rope-freqs-tiny (F32 files, where llama.cpp is exact). The greedy ids must be the
// reference's too.
//
// Tolerance, per log-probability: twice the logit tolerance of the backend's own fixture test (a
// log-probability is a logit minus the log-sum-exp, each off by at most that): CPU 1e-3 x the
// reference logits' range (cpu_fixtures_test), Vulkan 3e-3 x their standard deviation, for its F16
// KV cache (runner_fixtures_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/vulkan/core/device_info.h"
#include "tests/clients/process_util.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/cpu/reference_data.h"

namespace {

using vks::test::Daemon;
using Json = nlohmann::json;

struct Fixture {
  std::string model;      // file in the models folder
  std::string reference;  // reference/<reference>.{logits.f32,greedy.ids}
};

const char* const kLongPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends "
    "every day.";

const Fixture kFixtures[] = {
    {"kquant-q4_k_m.gguf", "kquant-q4_k_m.floatref"},
    {"kquant-q5_k_m.gguf", "kquant-q5_k_m.floatref"},
    {"kquant-q6_k.gguf", "kquant-q6_k.floatref"},
    {"kquant-q3_k_m.gguf", "kquant-q3_k_m.floatref"},
    {"kquant-q2_k.gguf", "kquant-q2_k.floatref"},
    {"kquant-q4_1.gguf", "kquant-q4_1.floatref"},
    {"kquant-q5_0.gguf", "kquant-q5_0.floatref"},
    {"kquant-q5_1.gguf", "kquant-q5_1.floatref"},
    {"kquant-q2_k-pure.gguf", "kquant-q2_k-pure.floatref"},
    {"kquant-q3_k-pure.gguf", "kquant-q3_k-pure.floatref"},
    {"kquant-q4_k-pure.gguf", "kquant-q4_k-pure.floatref"},
    {"kquant-q5_k-pure.gguf", "kquant-q5_k-pure.floatref"},
    {"qwen2-tiny.gguf", "qwen2-tiny"},
    {"llama3-rope-freqs-tiny.gguf", "llama3-rope-freqs-tiny"},
};

struct Case {
  Fixture fixture;
  Daemon::Backend backend;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.fixture.reference + (info.param.backend == Daemon::Backend::kCpu ? "_cpu" : "_vulkan");
  std::replace_if(s.begin(), s.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return s;
}

// The K-quant files the CPU backend computes exactly as llama.cpp does, against llama.cpp's files.
const Fixture kCpuFixtures[] = {
    {"kquant-q4_k_m.gguf", "kquant-q4_k_m"},     {"kquant-q5_k_m.gguf", "kquant-q5_k_m"},
    {"kquant-q6_k.gguf", "kquant-q6_k"},         {"kquant-q3_k_m.gguf", "kquant-q3_k_m"},
    {"kquant-q2_k.gguf", "kquant-q2_k"},         {"kquant-q2_k-pure.gguf", "kquant-q2_k-pure"},
    {"kquant-q3_k-pure.gguf", "kquant-q3_k-pure"}, {"kquant-q5_k-pure.gguf", "kquant-q5_k-pure"},
    {"qwen2-tiny.gguf", "qwen2-tiny"},           {"llama3-rope-freqs-tiny.gguf", "llama3-rope-freqs-tiny"},
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const Fixture& f : kCpuFixtures) out.push_back({f, Daemon::Backend::kCpu});
  for (const Fixture& f : kFixtures) out.push_back({f, Daemon::Backend::kVulkan});
  return out;
}

class CliFixtureLogprobs : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (GetParam().backend == Daemon::Backend::kVulkan && vks::vk::list_devices().empty()) {
      VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    }
  }
};

TEST_P(CliFixtureLogprobs, FirstTokenLogprobsAndGreedyIdsMatchTheReference) {
  const Fixture& f = GetParam().fixture;
  const bool vulkan = GetParam().backend == Daemon::Backend::kVulkan;
  const std::vector<float> logits = vks::test::load_f32_file(f.reference + ".logits.f32");
  const vks::test::GreedyReference ids = vks::test::load_ids_file(f.reference + ".greedy.ids");
  ASSERT_EQ(logits.size(), 512u) << "cannot read the reference logits";
  ASSERT_FALSE(ids.generated.empty()) << "prompt line and generated line expected";

  // The reference log-softmax and the tolerance (see the top of the file).
  double max_logit = *std::max_element(logits.begin(), logits.end()), sum = 0, mean = 0, var = 0;
  for (float l : logits) sum += std::exp(l - max_logit);
  const double lse = max_logit + std::log(sum);
  for (float l : logits) mean += l;
  mean /= static_cast<double>(logits.size());
  for (float l : logits) var += (l - mean) * (l - mean);
  const double range = max_logit - *std::min_element(logits.begin(), logits.end());
  const double tolerance = vulkan ? 2 * 3e-3 * std::sqrt(var / static_cast<double>(logits.size())) : 2 * 1e-3 * range;

  Daemon daemon({"--model", vks::test::model_path(f.model)}, GetParam().backend);
  const int n_generate = 6;
  std::vector<std::string> argv = {vks::test::build_dir() + "/clients/cli/vkstream", "generate"};
  for (const std::string& flag : daemon.cli_flags()) argv.push_back(flag);
  for (const char* a : {"--json", "--logprobs", "20", "-t", "0", "-n"}) argv.emplace_back(a);
  argv.push_back(std::to_string(n_generate));
  argv.emplace_back(f.model.rfind("llama3-rope", 0) == 0 ? kLongPrompt : "Once upon a time");
  const vks::test::ProcessResult r = vks::test::run_process(argv, {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::vector<Json> tokens;
  int prompt_tokens = -1;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    const Json e = Json::parse(line);
    if (e.at("type") == "accepted") prompt_tokens = e.at("prompt_tokens").get<int>();
    if (e.at("type") == "token") tokens.push_back(e);
  }
  EXPECT_EQ(prompt_tokens, static_cast<int>(ids.prompt.size())) << "the daemon's tokenization differs from the reference's";
  ASSERT_FALSE(tokens.empty()) << r.out;

  // First token: its 20 alternatives, best first, each at the reference's log-probability.
  const Json& first = tokens.front().at("logprobs").at(0);
  const Json& top = first.at("top");
  ASSERT_EQ(top.size(), 20u) << first.dump();
  double worst = 0;
  std::vector<int> listed;
  for (const Json& t : top) {
    const int id = t.at("id").get<int>();
    const double want = logits.at(static_cast<size_t>(id)) - lse;
    worst = std::max(worst, std::fabs(t.at("logprob").get<double>() - want));
    listed.push_back(id);
  }
  std::printf("%s on %s: max |logprob - reference| %.2e (tolerance %.2e)\n", f.model.c_str(), vulkan ? "Vulkan" : "CPU",
              worst, tolerance);
  EXPECT_LE(worst, tolerance) << first.dump();
  // Every id clearly inside the reference's top 20 is listed (near-ties at the edge may swap).
  std::vector<double> sorted(logits.begin(), logits.end());
  std::sort(sorted.rbegin(), sorted.rend());
  for (size_t id = 0; id < logits.size(); ++id) {
    if (logits[id] > sorted[19] + 2 * tolerance) {
      EXPECT_NE(std::find(listed.begin(), listed.end(), static_cast<int>(id)), listed.end()) << "reference top id " << id;
    }
  }
  EXPECT_EQ(first.at("id").get<int>(), listed.front()) << "greedy picks the most likely token";

  std::vector<int> generated;
  for (const Json& t : tokens) {
    for (const Json& id : t.at("ids")) generated.push_back(id.get<int>());
  }
  ASSERT_EQ(generated.size(), static_cast<size_t>(n_generate));
  for (int i = 0; i < n_generate; ++i) EXPECT_EQ(generated[static_cast<size_t>(i)], ids.generated.at(static_cast<size_t>(i))) << "step " << i;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CliFixtureLogprobs, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
