#pragma once
// What the Vulkan runner benchmarks share: the weight-matrix totals a step streams, and a driver
// that runs timed prefill/decode steps on sequences with their own KV blocks.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/model_runner.h"
#include "engine/vulkan/runner/runner_options.h"

namespace vks::bench {

// The weight matrices one step streams: every layer's projections and the output matrix (norms and
// the token-embedding gather are negligible next to them).
struct MatrixTotals {
  double bytes = 0;
  double weights = 0;
};
MatrixTotals matrix_totals(const LlamaWeights& w);

struct BenchSeq {
  std::vector<int32_t> blocks;
  int32_t n_past = 0;
  int32_t last = 1;
  int32_t state_slot = -1;  // a model with recurrent layers: the runner's state slot (given at its first step)
};

// Runs steps on one runner (Vulkan or the CPU reference), handing out its KV blocks to the sequences it is given.
class StepDriver {
 public:
  StepDriver(ModelRunner& runner, uint32_t seed);

  // One step: every seq gets `n` new tokens (random prompt tokens, or its last greedy token when
  // n == 1); returns the step's wall seconds.
  double step(std::vector<BenchSeq>& seqs, int32_t n);
  // Process CPU seconds of the last step (process_cpu.h): the work itself on a CPU device.
  double last_cpu_seconds() const { return last_cpu_s_; }
  void release(std::vector<BenchSeq>& seqs);

 private:
  int32_t random_token();

  ModelRunner& runner_;
  std::mt19937 rng_;
  std::vector<int32_t> free_;
  int32_t next_state_slot_ = 0;
  std::vector<int32_t> free_state_slots_;  // given back by release
  double last_cpu_s_ = 0;
};

// One runner's side of an alternating comparison: its driver, its decoding sequences (kept after
// run_alternating, for further steps) and the seconds of each timed step.
struct AlternatingSide {
  StepDriver* driver = nullptr;
  std::vector<BenchSeq> seqs;
  std::vector<double> prefill_s, decode_s;
  std::vector<double> decode_cpu_s;  // process CPU seconds of each timed decode step
};
struct AlternatingPlan {
  int prompt = 64;   // tokens of each timed prefill step (one sequence)
  int rounds = 3;    // timed prefill steps per side, after one warm-up each
  int batch = 1;     // decoding sequences per step
  int context = 16;  // untimed prompt tokens of each decoding sequence
  int gen = 32;      // timed decode steps per side, after one warm-up each
};
// Prefill rounds, then decode steps, the sides taking turns step by step, so that the load of a
// shared machine falls on every side alike.
void run_alternating(std::vector<AlternatingSide*>& sides, const AlternatingPlan& plan);
// --prompt, --rounds, --batch, --context and --gen, defaulting to `plan`'s values; `per` names what
// takes turns in the help ("model", "backend").
void add_alternating_options(CLI::App& app, AlternatingPlan& plan, const std::string& per);
// Runner limits and KV blocks for `plan` on `device` (64 spare positions for warm-up and profiled
// steps).
RunnerOptions alternating_runner_options(const AlternatingPlan& plan, const std::string& device);

// The q-quantile (0..1) of v by linear interpolation; 0 for an empty v.
double quantile(std::vector<double> v, double q);

// KV blocks enough for `max_batch` sequences of `context + gen` tokens plus one prompt.
int32_t bench_num_blocks(int32_t block_size, int max_batch, int context, int gen, int prompt);

}  // namespace vks::bench
