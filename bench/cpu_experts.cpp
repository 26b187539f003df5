// One MoE model on one Vulkan device with different numbers of expert layers run on the CPU
// (RunnerOptions::cpu_expert_layers, vkstreamd --cpu-experts), step for step:
//   vks_bench_cpu_experts MODEL.gguf [--cpu-experts 0 4 8] [--device SEL] [--prompt 64] [--gen 32]
//                         [--batch 1] [--context 16] [--rounds 5]
// One runner per count, all in one process, their steps taking turns (run_alternating), so the load
// of a shared machine falls on each alike. Prints each runner's split, its median prefill and decode
// step time and tokens/s, then each count's tokens/s as a ratio to the first count's (the median of
// the per-step ratios, with quartiles).
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/runner_steps.h"
#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/runner/expert_split.h"
#include "engine/vulkan/runner/vulkan_runner.h"

namespace {

using vks::bench::quantile;

struct Side : vks::bench::AlternatingSide {
  int32_t cpu_layers = 0;
  std::unique_ptr<vks::VulkanRunner> runner;
  std::unique_ptr<vks::bench::StepDriver> owned_driver;
};

// Tokens/s of `other` over `base`, step by step (base seconds / other seconds).
void print_ratio(const char* phase, const std::vector<double>& base_s, const std::vector<double>& other_s,
                 const Side& other) {
  std::vector<double> r;
  for (size_t i = 0; i < base_s.size() && i < other_s.size(); ++i) r.push_back(base_s[i] / other_s[i]);
  std::printf("%s tokens/s, %d layers' experts on the CPU / the first count: median %.3f, quartiles %.3f-%.3f over "
              "%zu steps\n",
              phase, other.cpu_layers, quantile(r, 0.5), quantile(r, 0.25), quantile(r, 0.75), r.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"An MoE model with N expert layers' experts on the CPU, alternating step for step: tokens/s per N"};
  std::string path, device;
  std::vector<int32_t> counts{0, 4, 8};
  vks::bench::AlternatingPlan plan{64, 5, 1, 16, 32};  // prompt, rounds, batch, context, gen
  app.add_option("model", path, "GGUF model file with experts")->required();
  app.add_option("--cpu-experts", counts, "expert layers whose experts run on the CPU, one runner each")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--device", device, "Vulkan device index or name substring");
  vks::bench::add_alternating_options(app, plan, "runner");
  CLI11_PARSE(app, argc, argv);

  try {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    spdlog::set_level(spdlog::level::warn);
    auto model = vks::LlamaModel::load(path);
    std::vector<std::unique_ptr<Side>> sides;
    std::vector<vks::bench::AlternatingSide*> turns;
    for (const int32_t n : counts) {
      auto s = std::make_unique<Side>();
      s->cpu_layers = n;
      vks::RunnerOptions o = vks::bench::alternating_runner_options(plan, device);
      o.cpu_expert_layers = n;
      s->runner = std::make_unique<vks::VulkanRunner>(*model, o);
      s->owned_driver = std::make_unique<vks::bench::StepDriver>(*s->runner, 42);
      s->driver = s->owned_driver.get();
      turns.push_back(s.get());
      sides.push_back(std::move(s));
    }
    std::printf("device: %s\nmodel:  %s\n", sides.front()->runner->device_name().c_str(), path.c_str());
    for (const auto& s : sides) {
      std::printf("--cpu-experts %d: %s\n", s->cpu_layers, vks::vk::describe_split(s->runner->expert_split()).c_str());
    }
    vks::bench::run_alternating(turns, plan);
    std::printf("\n| %-12s | %-7s | %9s | %10s |\n", "cpu experts", "phase", "ms/step", "tokens/s");
    std::printf("|--------------|---------|-----------|------------|\n");
    for (const auto& s : sides) {
      const double prefill = quantile(s->prefill_s, 0.5), decode = quantile(s->decode_s, 0.5);
      std::printf("| %-12d | %-7s | %9.2f | %10.2f |\n", s->cpu_layers, "prefill", prefill * 1e3, plan.prompt / prefill);
      std::printf("| %-12d | %-7s | %9.2f | %10.2f |\n", s->cpu_layers, "decode", decode * 1e3, plan.batch / decode);
    }
    std::printf("(medians over %d prefill and %d decode steps each, batch %d)\n\n", plan.rounds, plan.gen, plan.batch);
    for (size_t i = 1; i < sides.size(); ++i) {
      print_ratio("prefill", sides[0]->prefill_s, sides[i]->prefill_s, *sides[i]);
      print_ratio("decode ", sides[0]->decode_s, sides[i]->decode_s, *sides[i]);
    }
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "error (%s): %s\n", std::string(vks::error_code_name(e.code())).c_str(), e.what());
    return 1;
  }
  return 0;
}
