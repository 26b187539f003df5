// Two models on one device, step for step: the same-run throughput ratio of OTHER to BASE.
//   vks_bench_vulkan_versus BASE.gguf OTHER.gguf [--device SEL] [--prompt 64] [--gen 32]
//                           [--batch 1] [--context 16] [--rounds 5] [--profile]
//                           [--kv-type-base f16|q8_0] [--kv-type-other f16|q8_0]
// Both runners live in one process and their steps alternate (BASE, OTHER, BASE, ...), so load on a
// shared machine falls on both alike; separate processes run minutes apart and their ratio drifts
// with the neighbours (0.59-1.05 over five rounds for the same pair of files). Prints, per model,
// the median prefill and decode step time, tokens/s and weight GB/s, then OTHER / BASE tokens/s as
// the median of the per-pair ratios with their quartiles and range, and the same ratio of the
// steps' process CPU time (on a CPU device such as lavapipe that is the work itself, which a
// neighbour's load stretches far less than the wall time). --profile adds, after the timed
// steps, 4 more decode steps each with GPU timestamps: per-op milliseconds side by side.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/runner_steps.h"
#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/runner/vulkan_runner.h"

namespace {

using vks::bench::quantile;

struct Contender : vks::bench::AlternatingSide {
  std::string path;
  std::unique_ptr<vks::LlamaModel> model;
  std::unique_ptr<vks::VulkanRunner> runner;
  std::unique_ptr<vks::bench::StepDriver> owned_driver;
  vks::bench::MatrixTotals matrices;
};

// Per-pair tokens/s ratios OTHER / BASE = base seconds / other seconds.
std::vector<double> pair_ratios(const std::vector<double>& base_s, const std::vector<double>& other_s) {
  std::vector<double> r;
  for (size_t i = 0; i < base_s.size() && i < other_s.size(); ++i) r.push_back(base_s[i] / other_s[i]);
  return r;
}

void print_model_row(const char* phase, const Contender& c, const std::vector<double>& secs, int tokens) {
  const double med = quantile(secs, 0.5);
  std::printf("| %-7s | %-40s | %9.2f | %10.2f | %8.2f |\n", phase, c.path.c_str(), med * 1e3, tokens / med,
              c.matrices.bytes / med / 1e9);
}

// Per-op GPU ms per step of both models, one row per op, largest first by BASE + OTHER.
void print_profiles(const std::map<std::string, double>& base, const std::map<std::string, double>& other, int steps) {
  std::map<std::string, std::pair<double, double>> ops;
  for (const auto& [k, v] : base) ops[k].first = v / steps;
  for (const auto& [k, v] : other) ops[k].second = v / steps;
  std::vector<std::pair<std::string, std::pair<double, double>>> rows(ops.begin(), ops.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.first + a.second.second > b.second.first + b.second.second;
  });
  std::printf("\nGPU ms per decode step (timestamps, %d steps each, alternating):\n", steps);
  std::printf("  %-16s %10s %10s %8s\n", "op", "BASE", "OTHER", "OTHER-BASE");
  double tb = 0, to = 0;
  for (const auto& [k, v] : rows) {
    std::printf("  %-16s %10.3f %10.3f %+8.3f\n", k.c_str(), v.first, v.second, v.second - v.first);
    tb += v.first;
    to += v.second;
  }
  std::printf("  %-16s %10.3f %10.3f %+8.3f\n", "total", tb, to, to - tb);
}

void print_ratio(const char* phase, const std::vector<double>& r) {
  std::printf("%s OTHER/BASE tokens/s: median %.3f, quartiles %.3f-%.3f, range %.3f-%.3f over %zu pairs\n", phase,
              quantile(r, 0.5), quantile(r, 0.25), quantile(r, 0.75), quantile(r, 0.0), quantile(r, 1.0), r.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Two models on one Vulkan device, alternating step for step: same-run throughput ratio"};
  std::string base_path, other_path, device;
  vks::bench::AlternatingPlan plan{64, 5, 1, 16, 32};  // prompt, rounds, batch, context, gen
  bool profile = false;
  app.add_option("base", base_path, "GGUF model file the ratio is relative to")->required();
  app.add_option("other", other_path, "GGUF model file compared with it")->required();
  app.add_option("--device", device, "Vulkan device index or name substring");
  vks::bench::add_alternating_options(app, plan, "model");
  app.add_flag("--profile", profile, "print per-op GPU time of both models' decode steps side by side");
  // The same file twice with two KV cache types measures what a type costs (issue: q8_0 <= 5%).
  std::string kv_base = "f16", kv_other = "f16";
  app.add_option("--kv-type-base", kv_base, "KV cache type of BASE (K and V)")->check(CLI::IsMember({"f16", "q8_0", "q4_0"}));
  app.add_option("--kv-type-other", kv_other, "KV cache type of OTHER (K and V)")->check(CLI::IsMember({"f16", "q8_0", "q4_0"}));
  CLI11_PARSE(app, argc, argv);

  try {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    spdlog::set_level(spdlog::level::warn);
    Contender base, other;
    base.path = base_path;
    other.path = other_path;
    for (Contender* c : {&base, &other}) {
      c->model = vks::LlamaModel::load(c->path);
      vks::RunnerOptions o = vks::bench::alternating_runner_options(plan, device);
      o.kv_type_k = o.kv_type_v = vks::parse_kv_type(c == &base ? kv_base : kv_other);
      c->runner = std::make_unique<vks::VulkanRunner>(*c->model, o);
      c->owned_driver = std::make_unique<vks::bench::StepDriver>(*c->runner, 42);
      c->driver = c->owned_driver.get();
      c->matrices = vks::bench::matrix_totals(c->model->weights());
    }
    std::printf("device: %s\n", base.runner->device_name().c_str());
    for (const Contender* c : {&base, &other}) {
      std::printf("%s: KV %s, %llu bytes a token\n", c == &base ? "base" : "other", c->runner->kv_type().c_str(),
                  static_cast<unsigned long long>(c->runner->kv_bytes_per_token()));
    }

    std::vector<vks::bench::AlternatingSide*> sides{&base, &other};
    vks::bench::run_alternating(sides, plan);
    constexpr int kProfiledSteps = 4;
    if (profile) {
      for (Contender* c : {&base, &other}) c->runner->set_profiling(true);
      for (int i = 0; i < kProfiledSteps; ++i) {
        for (Contender* c : {&base, &other}) c->driver->step(c->seqs, 1);
      }
    }

    std::printf("\n| %-7s | %-40s | %9s | %10s | %8s |\n", "phase", "model", "ms/step", "tokens/s", "GB/s");
    std::printf("|---------|------------------------------------------|-----------|------------|----------|\n");
    for (const Contender* c : {&base, &other}) print_model_row("prefill", *c, c->prefill_s, plan.prompt);
    for (const Contender* c : {&base, &other}) print_model_row("decode", *c, c->decode_s, plan.batch);
    std::printf("(medians; GB/s = the model's weight-matrix bytes / step time)\n\n");
    print_ratio("prefill", pair_ratios(base.prefill_s, other.prefill_s));
    print_ratio("decode ", pair_ratios(base.decode_s, other.decode_s));
    print_ratio("decode (process CPU time)", pair_ratios(base.decode_cpu_s, other.decode_cpu_s));
    if (profile) print_profiles(base.runner->profile(), other.runner->profile(), kProfiledSteps);
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "error (%s): %s\n", std::string(vks::error_code_name(e.code())).c_str(), e.what());
    return 1;
  }
  return 0;
}
