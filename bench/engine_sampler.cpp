// Cost of per-request sampling on the engine thread, per token, for realistic vocabulary sizes:
// tells whether sampling belongs on a worker pool (it is on the step's critical path).
//   engine_sampler [--vocab 32000] [--iters 2000]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <random>

#include "engine/sched/sampler.h"

int main(int argc, char** argv) {
  int vocab = 32000, iters = 2000;
  CLI::App app{"sampler cost per token"};
  app.add_option("--vocab", vocab);
  app.add_option("--iters", iters);
  CLI11_PARSE(app, argc, argv);
  if (vocab < 2 || iters < 1) return 2;
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<std::vector<float>> rows(16, std::vector<float>(vocab));
  for (auto& r : rows) for (float& x : r) x = d(rng);
  std::vector<int32_t> history(512);
  for (int32_t& t : history) t = static_cast<int32_t>(rng() % vocab);

  struct Case { const char* name; vks::SamplingParams p; int32_t logprobs; };
  std::vector<Case> cases;
  auto add = [&](const char* name, auto mutate, int32_t lp) {
    vks::SamplingParams p;
    mutate(p);
    cases.push_back({name, p, lp});
  };
  add("greedy", [](auto& p) { p.temperature = 0; }, -1);
  add("greedy+logprob", [](auto& p) { p.temperature = 0; }, 0);
  add("greedy+top5 logprobs", [](auto& p) { p.temperature = 0; }, 5);
  add("temperature", [](auto& p) { p.temperature = 0.8f; }, -1);
  add("temp+top_k 40", [](auto& p) { p.temperature = 0.8f; p.top_k = 40; }, -1);
  add("temp+top_p 0.9", [](auto& p) { p.temperature = 0.8f; p.top_p = 0.9f; }, -1);
  add("temp+min_p 0.05", [](auto& p) { p.temperature = 0.8f; p.min_p = 0.05f; }, -1);
  add("temp+penalties", [](auto& p) { p.temperature = 0.8f; p.repetition_penalty = 1.1f; p.frequency_penalty = 0.2f; }, -1);
  std::printf("vocab %d, %d draws per case\n%-22s %12s\n", vocab, iters, "case", "us/token");
  for (const Case& c : cases) {
    vks::sched::Sampler s(c.p, c.logprobs, 7);
    const auto t0 = std::chrono::steady_clock::now();
    int64_t sink = 0;
    for (int i = 0; i < iters; ++i) sink += s.sample(rows[i % rows.size()], history, {}).id;
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    std::printf("%-22s %12.1f%s\n", c.name, us, sink < 0 ? " " : "");
  }
  return 0;
}
