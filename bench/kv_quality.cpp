// What a quantized KV cache costs in accuracy: the Vulkan runner with F16 pools and with quantized
// pools (K and V; each of --types) fed the same tokens, their logits compared at every step.
//   vks_bench_kv_quality MODEL.gguf [MODEL.gguf ...] [--types q8_0 q4_0] [--prompt 64] [--gen 192] [--seed 1]
// Per model: a random prompt (seeded) prefilled in one step, then --gen tokens decoded one a step,
// each the F16 run's greedy token (teacher forcing: both caches see the same history, so the error
// is the cache's alone, not a diverged continuation). Prints the mean and largest normalized logit
// error (||quantized - f16|| / ||f16|| over the vocabulary), the largest absolute logit difference and how
// often the greedy tokens agree.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/runner/vulkan_runner.h"

namespace {

// One sequence on one runner: its blocks 0.. in order (the runner holds nothing else).
struct Sequence {
  explicit Sequence(vks::ModelRunner& r) : runner(r) {}
  vks::ModelRunner& runner;
  int32_t n_past = 0;
  std::vector<float> logits;  // of the last step
  int32_t argmax = -1;

  void step(const std::vector<int32_t>& tokens) {
    vks::StepBatch batch;
    batch.tokens = tokens;
    vks::SeqChunk c;
    c.n_tokens = static_cast<int32_t>(tokens.size());
    c.n_past = n_past;
    const int32_t len = n_past + c.n_tokens;
    for (int32_t b = 0; b * runner.block_size() < len; ++b) c.block_table.push_back(b);
    c.logits = vks::LogitsMode::kFull;
    batch.seqs.push_back(std::move(c));
    batch.finalize(runner.block_size());
    vks::StepResult r;
    runner.step(batch, r);
    logits = std::move(r.logits);
    argmax = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    n_past = len;
  }
};

struct Errors {
  double sum_norm = 0, max_norm = 0, max_abs = 0;
  int steps = 0, agree = 0;
  void add(const std::vector<float>& got, const std::vector<float>& want, bool same_top) {
    double diff2 = 0, want2 = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const double d = double(got[i]) - want[i];
      diff2 += d * d;
      want2 += double(want[i]) * want[i];
      max_abs = std::max(max_abs, std::fabs(d));
    }
    const double norm = std::sqrt(diff2 / std::max(want2, 1e-30));
    sum_norm += norm;
    max_norm = std::max(max_norm, norm);
    ++steps;
    agree += same_top ? 1 : 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Logit error of a quantized KV cache against F16, teacher-forced, per model and type"};
  std::vector<std::string> paths, types{"q8_0", "q4_0"};
  int prompt = 64, gen = 192;
  uint32_t seed = 1;
  app.add_option("models", paths, "GGUF model files (head sizes multiples of 32)")->required();
  app.add_option("--prompt", prompt, "prompt tokens (random, seeded)")->check(CLI::Range(1, 2048));
  app.add_option("--gen", gen, "decode steps compared")->check(CLI::Range(1, 4096));
  app.add_option("--types", types, "quantized KV types compared with F16")->check(CLI::IsMember({"q8_0", "q4_0"}));
  app.add_option("--seed", seed, "prompt seed");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  std::printf("| model | KV type | KV bytes/token f16 -> quantized | mean norm. error | max norm. error | max abs logit diff | greedy agree |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  int rc = 0;
  for (const std::string& path : paths) {
    const std::string name = path.substr(path.find_last_of('/') + 1);
    try {
      // One F16 run per model, teacher for every quantized type, stepped beside them.
      const auto model = vks::LlamaModel::load(path);
      vks::RunnerOptions o;
      o.max_step_tokens = std::max(prompt, 16);
      o.max_step_seqs = 1;
      o.num_blocks = (prompt + gen + 15) / 16 + 1;
      vks::VulkanRunner f16(*model, o);
      std::vector<std::unique_ptr<vks::VulkanRunner>> quantized;
      for (const std::string& type : types) {
        o.kv_type_k = o.kv_type_v = vks::parse_kv_type(type);
        quantized.push_back(std::make_unique<vks::VulkanRunner>(*model, o));
      }
      std::mt19937 rng(seed);
      const uint32_t vocab = model->config().vocab_size;
      std::vector<int32_t> tokens(static_cast<size_t>(prompt));
      for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % vocab);
      Sequence a(f16);
      std::vector<Sequence> b;
      for (const auto& r : quantized) b.emplace_back(*r);
      std::vector<Errors> e(quantized.size());
      for (int i = 0; i <= gen; ++i) {
        // The prompt first, then the F16 run's token for every run.
        const std::vector<int32_t> next = i == 0 ? tokens : std::vector<int32_t>{a.argmax};
        a.step(next);
        for (size_t q = 0; q < b.size(); ++q) {
          b[q].step(next);
          e[q].add(b[q].logits, a.logits, a.argmax == b[q].argmax);
        }
      }
      for (size_t q = 0; q < b.size(); ++q) {
        std::printf("| %s | %s | %llu -> %llu | %.2e | %.2e | %.3f | %d/%d |\n", name.c_str(), types[q].c_str(),
                    static_cast<unsigned long long>(f16.kv_bytes_per_token()),
                    static_cast<unsigned long long>(quantized[q]->kv_bytes_per_token()), e[q].sum_norm / e[q].steps,
                    e[q].max_norm, e[q].max_abs, e[q].agree, e[q].steps);
      }
    } catch (const vks::Error& err) {
      std::printf("| %s | | error: %s | | | | |\n", name.c_str(), err.what());
      rc = 1;
    }
  }
  return rc;
}
