#include "bench/runner_steps.h"

#include <algorithm>
#include <chrono>

#include "bench/process_cpu.h"
#include "engine/common/error.h"

namespace vks::bench {

MatrixTotals matrix_totals(const LlamaWeights& w) {
  MatrixTotals t;
  for (const TensorRef* m : step_matrices(w)) {
    t.bytes += static_cast<double>(m->nbytes);
    t.weights += static_cast<double>(m->rows) * static_cast<double>(m->cols);
  }
  return t;
}

StepDriver::StepDriver(ModelRunner& runner, uint32_t seed) : runner_(runner), rng_(seed) {
  for (int32_t b = runner.num_blocks() - 1; b >= 0; --b) free_.push_back(b);
}

int32_t StepDriver::random_token() {
  return static_cast<int32_t>(3 + rng_() % (runner_.config().vocab_size - 3));
}

double StepDriver::step(std::vector<BenchSeq>& seqs, int32_t n) {
  StepBatch batch;
  for (BenchSeq& s : seqs) {
    const int32_t len = s.n_past + n;
    while (static_cast<int32_t>(s.blocks.size()) * runner_.block_size() < len) {
      if (free_.empty()) throw Error(ErrorCode::kOutOfMemory, "benchmark ran out of KV blocks");
      s.blocks.push_back(free_.back());
      free_.pop_back();
    }
    SeqChunk c;
    c.token_offset = static_cast<int32_t>(batch.tokens.size());
    c.n_tokens = n;
    c.n_past = s.n_past;
    c.block_table = s.blocks;
    c.logits = LogitsMode::kArgmax;
    if (runner_.recurrent_state_slots() > 0) {
      if (s.state_slot < 0) {
        if (free_state_slots_.empty() && next_state_slot_ >= runner_.recurrent_state_slots()) {
          throw Error(ErrorCode::kOutOfMemory, "benchmark ran out of recurrent state slots");
        }
        if (free_state_slots_.empty()) {
          s.state_slot = next_state_slot_++;
        } else {
          s.state_slot = free_state_slots_.back();
          free_state_slots_.pop_back();
        }
      }
      c.state_slot = s.state_slot;
    }
    for (int32_t i = 0; i < n; ++i) batch.tokens.push_back(n == 1 ? s.last : random_token());
    batch.seqs.push_back(std::move(c));
  }
  batch.finalize(runner_.block_size());
  StepResult r;
  const double cpu0 = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  runner_.step(batch, r);
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  last_cpu_s_ = process_cpu_seconds() - cpu0;
  for (size_t k = 0; k < seqs.size(); ++k) {
    seqs[k].n_past += n;
    seqs[k].last = r.argmax[k];
  }
  return dt;
}

void StepDriver::release(std::vector<BenchSeq>& seqs) {
  for (BenchSeq& s : seqs) {
    free_.insert(free_.end(), s.blocks.begin(), s.blocks.end());
    if (s.state_slot >= 0) free_state_slots_.push_back(s.state_slot);  // a new sequence starts it afresh
  }
  seqs.clear();
}

void run_alternating(std::vector<AlternatingSide*>& sides, const AlternatingPlan& plan) {
  for (int r = 0; r <= plan.rounds; ++r) {  // round 0 warms up
    for (AlternatingSide* s : sides) {
      s->seqs.assign(1, BenchSeq{});
      const double dt = s->driver->step(s->seqs, plan.prompt);
      if (r > 0) s->prefill_s.push_back(dt);
      s->driver->release(s->seqs);
    }
  }
  for (AlternatingSide* s : sides) {
    s->seqs.assign(static_cast<size_t>(plan.batch), BenchSeq{});
    s->driver->step(s->seqs, plan.context);  // untimed prompts
    s->driver->step(s->seqs, 1);             // warm-up decode
  }
  for (int i = 0; i < plan.gen; ++i) {
    for (AlternatingSide* s : sides) {
      s->decode_s.push_back(s->driver->step(s->seqs, 1));
      s->decode_cpu_s.push_back(s->driver->last_cpu_seconds());
    }
  }
}

void add_alternating_options(CLI::App& app, AlternatingPlan& plan, const std::string& per) {
  app.add_option("--prompt", plan.prompt, "prefill prompt length")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--rounds", plan.rounds, "prefill steps timed per " + per)->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--batch", plan.batch, "decoding sequences per step")->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--context", plan.context, "prompt tokens of each decoding sequence (not timed)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--gen", plan.gen, "decode steps timed per " + per)->check(CLI::Range(1, 4096))->capture_default_str();
}

RunnerOptions alternating_runner_options(const AlternatingPlan& plan, const std::string& device) {
  RunnerOptions o;
  o.device = device;
  o.max_step_tokens = std::max(plan.prompt, plan.batch * plan.context);
  o.max_step_seqs = plan.batch;
  o.max_context = std::max(plan.prompt, plan.context) + plan.gen + 64;
  o.num_blocks = bench_num_blocks(o.block_size, plan.batch, plan.context, plan.gen, plan.prompt);
  return o;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

int32_t bench_num_blocks(int32_t block_size, int max_batch, int context, int gen, int prompt) {
  return (max_batch * (context + gen + 2 + 16) + prompt + 16) / block_size + 2 * max_batch + 4;
}

}  // namespace vks::bench
