// The gated delta rule (engine/cpu/delta_rule.h, Qwen3.5's linear attention) at each level this
// CPU executes: nanoseconds per head and token, one token a call (a decode step) and a run of
// tokens of one sequence (a prompt read in one step), over the heads of one layer, each with its
// own d x d state (held in cache across the run, as the CPU runner's heads are). Every level gives
// the same bits (cpu_reference_ops_test); this says what each costs. Shared machines are noisy:
// read the ratios between levels measured in one run.
//   vks_bench_delta_rule [--head-dim 128] [--heads 16] [--run 128] [--seconds 0.3]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "engine/cpu/attention_level.h"
#include "engine/cpu/delta_rule.h"

namespace {

using Clock = std::chrono::steady_clock;
using vks::ref::AttendLevel;

struct Inputs {
  size_t d = 0, heads = 0, run = 0;
  std::vector<float> states;            // [heads][d][d]
  std::vector<float> q, k, v;           // [run][d]
  std::vector<float> decay, beta;       // [run]
  std::vector<float> out;               // [run][heads][d]
};

Inputs make_inputs(size_t d, size_t heads, size_t run) {
  Inputs in;
  in.d = d;
  in.heads = heads;
  in.run = run;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  std::uniform_real_distribution<float> unit(0.9f, 1.0f);
  in.states.resize(heads * d * d);
  for (float& s : in.states) s = normal(rng);
  for (auto* x : {&in.q, &in.k, &in.v}) {
    x->resize(run * d);
    for (float& f : *x) f = normal(rng);
  }
  in.decay.resize(run);
  in.beta.resize(run);
  for (size_t t = 0; t < run; ++t) {
    in.decay[t] = unit(rng);
    in.beta[t] = unit(rng) - 0.5f;
  }
  in.out.resize(run * heads * d);
  return in;
}

// Every head's run of `tokens` tokens (1: decode's call pattern), as often as fits in `seconds`:
// nanoseconds per head and token.
double time_runs(Inputs& in, AttendLevel level, size_t tokens, double seconds) {
  const size_t d = in.d;
  const float scale = 1.0f / 11.3137f;
  size_t head_tokens = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  size_t t0 = 0;
  do {
    for (size_t h = 0; h < in.heads; ++h) {
      vks::ref::DeltaRuleTokens x;
      x.q = &in.q[t0 * d];
      x.k = &in.k[t0 * d];
      x.v = &in.v[t0 * d];
      x.qkv_stride = d;
      x.decay = &in.decay[t0];
      x.beta = &in.beta[t0];
      x.gate_stride = 1;
      x.o = &in.out[(t0 * in.heads + h) * d];
      x.o_stride = in.heads * d;
      x.n = tokens;
      vks::ref::delta_rule(&in.states[h * d * d], x, scale, d, level);
    }
    head_tokens += in.heads * tokens;
    t0 = (t0 + tokens) % (in.run - tokens + 1);
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  return elapsed * 1e9 / static_cast<double>(head_tokens);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The gated delta rule per level: ns per head and token"};
  size_t d = 128, heads = 16, run = 128;
  double seconds = 0.3;
  app.add_option("--head-dim", d, "head size (the state is head-dim x head-dim)")->check(CLI::Range(1, 512));
  app.add_option("--heads", heads, "value heads of a layer, each its own state")->check(CLI::Range(1, 256));
  app.add_option("--run", run, "tokens of one sequence in a prompt step")->check(CLI::Range(1, 4096));
  app.add_option("--seconds", seconds, "time per figure")->check(CLI::Range(0.01, 60.0));
  CLI11_PARSE(app, argc, argv);

  Inputs in = make_inputs(d, heads, run);
  std::printf("head dim %zu, %zu heads (%.1f KiB of state each), runs of %zu tokens\n", d, heads,
              static_cast<double>(d * d * sizeof(float)) / 1024.0, run);
  std::printf("%-9s %16s %16s\n", "level", "ns/head-token 1", "ns/head-token run");
  const AttendLevel fastest = vks::ref::fastest_attend_level();
  for (AttendLevel level : {AttendLevel::kBaseline, AttendLevel::kAvx2, AttendLevel::kAvx512}) {
    if (level > fastest) continue;
    const double one = time_runs(in, level, 1, seconds);
    const double many = time_runs(in, level, run, seconds);
    std::printf("%-9s %16.1f %16.1f\n", vks::ref::attend_level_name(level), one, many);
  }
  return 0;
}
