// Prints the CPU backend's prefill and decode tokens/s for GGUFs (the CpuRunner, what the daemon
// serves with), and by default the float reference's (CpuModel, the tests' oracle). Given several
// files (e.g. one model in several weight types), it ends with one table comparing them: weight
// bytes, prefill and decode tok/s, and the GB/s of weights a decode token streams, set against a
// plain-C read probe of the same thread count when --probe is given: the probe reads memory just
// before and just after each timed decode, and each decode's share is of those two readings' mean
// (the probe's readings moved by 9-38% within one run of a few minutes on this project's VM; one
// probe at the start let the share move with that drift, not with the code).
//   vks_bench_cpu_reference MODEL.gguf [MODEL2.gguf ...] [--threads N] [--prompt N] [--generate N]
//                           [--seqs 4 8] [--same-prompt] [--reps N] [--no-reference] [--probe] [--mmap-weights]
//                           [--scatter-blocks] [--fixed-threads] [--busy-pairs N]
// --mmap-weights: the runner reads the weights from the mapped file, not from its copy in huge-page
// memory (CpuRunnerOptions::weights_in_memory), to measure what the copy buys.
// --scatter-blocks: the sequences' block tables take the pool's blocks in a shuffled order, as a
// server's pool hands them out once requests have come and gone (by default in order: a fresh
// pool's, which the hardware prefetchers follow).
// Each row also shows the process CPU milliseconds per token (all threads; on a shared machine they
// show the work when other processes stretch the wall time).
// --reps N: each runner figure is the median of N runs after an untimed warm-up run (bench/cpu_versus.sh
// runs it alternating with llama.cpp's CPU backend).
// --fixed-threads: every step on every thread (decode steps do not shed threads; decode_threads.h).
// --busy-pairs N: then N pairs of batch-1 decode runs (prefill, then --generate tokens), one quiet
// and one beside a process spinning on one core (busy_spinner.h: stopped and resumed within this
// run), the order flipped every pair: each pair's busy / quiet ratio and their median (issue 34's
// loaded-machine figure, both halves of a pair under the same host conditions).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/busy_spinner.h"
#include "bench/process_cpu.h"
#include "bench/read_probe.h"
#include "engine/common/error.h"
#include "engine/cpu/cpu_model.h"
#include "engine/cpu/cpu_runner.h"
#include "engine/cpu/reference_ops.h"
#include "engine/model/llama_model.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Wall seconds, and the process's CPU seconds over the same span: on a shared machine the CPU time
// shows the work a phase costs even when other processes stretch its wall time.
struct Timed {
  double wall = 0;
  double cpu = 0;
};
struct Stopwatch {
  Clock::time_point start = Clock::now();
  double cpu_start = vks::bench::process_cpu_seconds();
  Timed elapsed() const { return {seconds_since(start), vks::bench::process_cpu_seconds() - cpu_start}; }
};

void print_row(const char* what, int tokens, Timed t) {
  std::printf("%-40s %8d %10.3f %12.2f %12.3f\n", what, tokens, t.wall, tokens / t.wall, 1e3 * t.cpu / tokens);
}

// "q4_K x 9, q6_K x 3" over the model's matrices (norms and biases left out); matrix_bytes: what a
// one-token decode step reads of them.
std::string matrix_types(const vks::LlamaModel& model, uint64_t& matrix_bytes) {
  std::map<std::string, int> count;
  matrix_bytes = 0;
  auto add = [&](const vks::TensorRef& t) {
    ++count[std::string(vks::ggml_type_name(t.type))];
    matrix_bytes += t.nbytes;
  };
  // Every layer's matrices (a DeltaNet layer's own) and the output; the token embedding is read one
  // row per token: not counted.
  for (const vks::TensorRef* m : vks::step_matrices(model.weights())) add(*m);
  // Of a routed layer's stacked experts a token reads the n_used it is routed to.
  for (size_t l = 0; l < model.config().layers.size(); ++l) {
    const vks::FfnSpec& ffn = model.config().layers[l].ffn;
    if (!ffn.routed()) continue;
    const vks::LayerWeights& w = model.weights().layers[l];
    for (const vks::TensorRef* t : {&w.w_gate, &w.w_up, &w.w_down}) {
      matrix_bytes -= t->nbytes - t->nbytes / ffn.n_experts * ffn.n_used;
    }
  }
  std::string s;
  for (const auto& [name, n] : count) s += (s.empty() ? "" : ", ") + name + " x " + std::to_string(n);
  return s;
}

// A timed decode and the read probe's GB/s beside it (the mean of a reading just before and one
// just after).
struct ProbedDecode {
  double decode_gbs = 0;
  double probe_gbs = 0;
  double share() const { return decode_gbs / probe_gbs; }
};

// Pool block ids 0..n-1 in order, or shuffled (a fixed seed: every run and build the same order).
std::vector<int32_t> block_order(int32_t n, bool scatter) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t b = 0; b < n; ++b) ids[static_cast<size_t>(b)] = b;
  if (scatter) std::shuffle(ids.begin(), ids.end(), std::mt19937(7));
  return ids;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs fn() once untimed when reps > 1, then reps times; the median wall and the median CPU seconds.
template <class Fn>
Timed median_seconds(int reps, const Fn& fn) {
  if (reps > 1) fn();
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    const Timed t = fn();
    wall.push_back(t.wall);
    cpu.push_back(t.cpu);
  }
  return {median(wall), median(cpu)};
}

struct Summary {
  std::string file;
  std::string types;
  uint64_t matrix_bytes = 0;
  double prefill_tps = 0;
  double decode_tps = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU reference prefill/decode throughput"};
  std::vector<std::string> paths;
  int threads = 0;
  int n_prompt = 64;
  int n_generate = 32;
  app.add_option("models", paths, "GGUF files")->required();
  app.add_option("--threads,-t", threads, "worker threads (0 = all cores)");
  app.add_option("--prompt,-p", n_prompt, "prompt tokens")->check(CLI::Range(1, 4096));
  app.add_option("--generate,-n", n_generate, "generated tokens")->check(CLI::Range(1, 4096));
  std::vector<int> batch_sizes = {4, 8};
  app.add_option("--seqs,-s", batch_sizes, "sequence counts for aggregate decode (after a shared-length prefill)")
      ->check(CLI::Range(1, 64));
  int reps = 1;
  app.add_option("--reps,-r", reps, "median of this many runs per runner figure (after a warm-up run when > 1)")
      ->check(CLI::Range(1, 100));
  bool no_reference = false;
  app.add_flag("--no-reference", no_reference, "skip the float reference (CpuModel), which is slow on large models");
  bool same_prompt = false;
  app.add_flag("--same-prompt", same_prompt,
               "every sequence of an aggregate decode the same prompt (by default each its own, so that an expert "
               "model's sequences choose different experts; the same prompt makes them all choose the same)");
  bool probe = false;
  app.add_flag("--probe", probe, "measure plain-C read bandwidth at the thread count and compare decode's with it");
  bool mmap_weights = false;
  app.add_flag("--mmap-weights", mmap_weights, "the runner reads the weights from the mapped file (not a copy in memory)");
  bool scatter_blocks = false;
  app.add_flag("--scatter-blocks", scatter_blocks, "block tables in a shuffled order (a pool that has served a while)");
  bool gguf_layout = false;
  app.add_flag("--gguf-layout", gguf_layout,
               "the runner's copy keeps every matrix in GGUF's layout (not packed for the kernel level)");
  bool fixed_threads = false;
  app.add_flag("--fixed-threads", fixed_threads,
               "every step on every thread (CpuRunnerOptions::adapt_decode_threads off: decode steps do not shed "
               "threads a busy machine keeps waiting)");
  int busy_pairs = 0;
  app.add_option("--busy-pairs", busy_pairs, "then this many quiet/busy pairs of batch-1 decode runs")
      ->check(CLI::Range(0, 100));
  CLI11_PARSE(app, argc, argv);
  std::optional<vks::bench::BusySpinner> spinner;  // forked before any thread starts
  if (busy_pairs > 0) spinner.emplace();
  const int n_threads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  std::optional<vks::bench::ReadProbe> read_probe;
  if (probe) read_probe.emplace(n_threads);

  std::vector<Summary> summaries;
  for (const std::string& path : paths) try {
    const auto model = vks::LlamaModel::load(path);
    const vks::LlamaConfig& c = model->config();
    std::mt19937 rng(42);
    std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(c.vocab_size) - 1);
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (int32_t& t : prompt) t = token(rng);
    prompt[0] = 1;
    const int total = n_prompt + n_generate;

    // CpuRunner: the whole prompt in one step (weights dequantized once per step), then decode.
    vks::CpuRunnerOptions options;
    options.threads = threads;
    options.max_step_tokens = std::max(512, n_prompt);
    options.num_blocks = (total + options.block_size - 1) / options.block_size;
    options.weights_in_memory = !mmap_weights;
    options.pack_weights = !gguf_layout;
    options.adapt_decode_threads = !fixed_threads;
    vks::CpuRunner runner(*model, options);
    const vks::WeightsResidence& residence = runner.weights_residence();
    std::printf("weights read from %s, %zu matrices packed\n",
                residence.copied ? (residence.huge_pages ? "memory (huge pages requested)" : "memory")
                                : ("the mapped file: " + residence.why_not).c_str(),
                runner.packed_matrices());
    vks::StepBatch batch;
    vks::SeqChunk seq;
    seq.n_tokens = n_prompt;
    seq.block_table = block_order(options.num_blocks, scatter_blocks);
    seq.logits = vks::LogitsMode::kArgmax;
    seq.state_slot = 0;  // models with recurrent layers
    batch.tokens = prompt;
    batch.seqs = {seq};
    batch.finalize(options.block_size);
    vks::StepResult result;
    auto prefill = [&] {
      batch.tokens = prompt;
      batch.seqs[0].n_past = 0;
      batch.seqs[0].n_tokens = n_prompt;
      batch.finalize(options.block_size);
      const Stopwatch watch;
      runner.step(batch, result);
      return watch.elapsed();
    };
    auto decode = [&] {  // after a prefill: the KV cache holds the prompt
      const Stopwatch watch;
      for (int i = 0; i < n_generate; ++i) {
        batch.tokens = {result.argmax[0]};
        batch.seqs[0].n_past = n_prompt + i;
        batch.seqs[0].n_tokens = 1;
        batch.finalize(options.block_size);
        runner.step(batch, result);
      }
      return watch.elapsed();
    };
    uint64_t matrix_bytes = 0;
    const std::string types = matrix_types(*model, matrix_bytes);
    const Timed runner_prefill = median_seconds(reps, prefill);
    std::vector<ProbedDecode> probed;
    const Timed runner_decode = median_seconds(reps, [&] {
      prefill();
      const double before = read_probe ? read_probe->gbs(3) : 0.0;
      const Timed t = decode();
      if (read_probe) {
        const double after = read_probe->gbs(3);
        probed.push_back({static_cast<double>(matrix_bytes) * n_generate / t.wall / 1e9, (before + after) / 2});
      }
      return t;
    });
    // The timed runs are the last `reps` (median_seconds runs one untimed first).
    probed.erase(probed.begin(), probed.end() - std::min(probed.size(), static_cast<size_t>(reps)));

    // Quiet and busy batch-1 decode in pairs, quiet first in even pairs.
    std::vector<std::pair<double, double>> pairs;  // (quiet, busy) tokens/s
    for (int p = 0; p < busy_pairs; ++p) {
      std::pair<double, double> pair;
      for (const bool busy : {p % 2 == 1, p % 2 == 0}) {
        spinner->set_busy(busy);
        prefill();
        (busy ? pair.second : pair.first) = n_generate / decode().wall;
      }
      spinner->set_busy(false);
      pairs.push_back(pair);
    }

    // CpuRunner aggregate decode: n sequences (each with the prompt prefilled) decode together.
    std::vector<std::pair<int, Timed>> aggregate;
    for (const int n_seqs : batch_sizes) {
      vks::CpuRunnerOptions multi = options;
      multi.num_blocks = options.num_blocks * n_seqs;
      multi.max_step_tokens = std::max(512, n_prompt * n_seqs);
      multi.max_step_seqs = n_seqs;
      multi.state_slots = n_seqs;
      vks::CpuRunner many(*model, multi);
      const std::vector<int32_t> blocks = block_order(multi.num_blocks, scatter_blocks);
      vks::StepBatch step;
      for (int s = 0; s < n_seqs; ++s) {
        vks::SeqChunk chunk;
        chunk.token_offset = s * n_prompt;
        chunk.n_tokens = n_prompt;
        const auto own = blocks.begin() + s * options.num_blocks;  // sequence s's share of the pool's blocks
        chunk.block_table.assign(own, own + options.num_blocks);
        chunk.logits = vks::LogitsMode::kArgmax;
        chunk.state_slot = s;
        step.seqs.push_back(chunk);
        step.tokens.insert(step.tokens.end(), prompt.begin(), prompt.end());
        if (s > 0 && !same_prompt) {  // sequence 0 keeps the shared prompt, the others draw their own
          for (auto t = step.tokens.end() - n_prompt + 1; t != step.tokens.end(); ++t) *t = token(rng);
        }
      }
      const vks::StepBatch prefill_step = step;
      vks::StepResult res;
      aggregate.emplace_back(n_seqs, median_seconds(reps, [&] {
        step = prefill_step;
        step.finalize(options.block_size);
        many.step(step, res);
        const Stopwatch watch;
        for (int i = 0; i < n_generate; ++i) {
          step.tokens.clear();
          for (int s = 0; s < n_seqs; ++s) {
            step.tokens.push_back(res.argmax[static_cast<size_t>(s)]);
            step.seqs[static_cast<size_t>(s)].token_offset = s;
            step.seqs[static_cast<size_t>(s)].n_tokens = 1;
            step.seqs[static_cast<size_t>(s)].n_past = n_prompt + i;
          }
          step.finalize(options.block_size);
          many.step(step, res);
        }
        return watch.elapsed();
      }));
    }

    // CpuModel: one token at a time, prompt included.
    Timed model_prefill, model_decode;
    if (!no_reference) {
      vks::CpuModel cpu(*model, threads, total);
      Stopwatch watch;
      int32_t next = 0;
      for (int i = 0; i < n_prompt; ++i) {
        const std::vector<float>& logits = cpu.forward(prompt[static_cast<size_t>(i)], i);
        next = vks::ref::argmax(logits.data(), logits.size());
      }
      model_prefill = watch.elapsed();
      watch = Stopwatch();
      for (int i = 0; i < n_generate; ++i) {
        const std::vector<float>& logits = cpu.forward(next, n_prompt + i);
        next = vks::ref::argmax(logits.data(), logits.size());
      }
      model_decode = watch.elapsed();
    }

    Summary summary;
    summary.file = path.substr(path.find_last_of('/') + 1);
    summary.types = types;
    summary.matrix_bytes = matrix_bytes;
    summary.prefill_tps = n_prompt / runner_prefill.wall;
    summary.decode_tps = n_generate / runner_decode.wall;
    summaries.push_back(summary);
    std::printf("model %s (%s): dim %u, layers %u, heads %u/%u, hidden %u, vocab %u, matrices %s\n", path.c_str(),
                c.architecture.c_str(), c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.hidden_dim, c.vocab_size,
                summary.types.c_str());
    std::printf("threads %d, reps %d\n\n", n_threads, reps);
    std::printf("%-40s %8s %10s %12s %12s\n", "phase", "tokens", "seconds", "tokens/s", "CPU ms/tok");
    print_row("CpuRunner prefill (one step)", n_prompt, runner_prefill);
    print_row("CpuRunner decode (batch 1)", n_generate, runner_decode);
    for (const auto& [n_seqs, timed] : aggregate) {
      const std::string label = "CpuRunner decode, " + std::to_string(n_seqs) + " seqs (aggregate)";
      print_row(label.c_str(), n_seqs * n_generate, timed);
    }
    if (!no_reference) {
      print_row("CpuModel prefill (token by token)", n_prompt, model_prefill);
      print_row("CpuModel decode", n_generate, model_decode);
    }
    const double decode_gbs = summary.matrix_bytes * summary.decode_tps / 1e9;
    std::printf("decode reads weights at %.2f GB/s (median run)", decode_gbs);
    if (!probed.empty()) {
      std::vector<double> shares, probes;
      for (const ProbedDecode& p : probed) {
        shares.push_back(p.share());
        probes.push_back(p.probe_gbs);
      }
      const auto [share_lo, share_hi] = std::minmax_element(shares.begin(), shares.end());
      const auto [probe_lo, probe_hi] = std::minmax_element(probes.begin(), probes.end());
      std::printf("; each run against the plain-C read probe beside it: %.0f%% (median of %zu runs, %.0f-%.0f%%; "
                  "the probe read %.2f-%.2f GB/s at %d threads)",
                  100.0 * median(shares), shares.size(), 100.0 * *share_lo, 100.0 * *share_hi, *probe_lo, *probe_hi,
                  n_threads);
    }
    std::printf("\n");
    if (!pairs.empty()) {
      std::vector<double> ratios;
      std::printf("batch-1 decode beside a process spinning on one core, tok/s quiet / busy per pair:");
      for (const auto& [quiet, busy] : pairs) {
        std::printf(" %.2f/%.2f", quiet, busy);
        ratios.push_back(busy / quiet);
      }
      const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
      std::printf("\nbusy / quiet: median %.2f of %zu pairs (%.2f-%.2f)\n", median(ratios), ratios.size(), *lo, *hi);
    }
    std::printf("\n");
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "error (%s): %s\n", std::string(vks::error_code_name(e.code())).c_str(), e.what());
    return 1;
  }
  if (summaries.size() > 1) {
    // Decode streams every matrix once per token: GB/s = matrix bytes x decode tok/s.
    std::printf("%-32s %10s %14s %14s %12s %9s  %s\n", "file", "MiB", "prefill tok/s", "decode tok/s", "decode GB/s",
                "vs first", "matrix types");
    for (const Summary& s : summaries) {
      std::printf("%-32s %10.1f %14.2f %14.2f %12.2f %9.2f  %s\n", s.file.c_str(), s.matrix_bytes / 1048576.0,
                  s.prefill_tps, s.decode_tps, s.matrix_bytes * s.decode_tps / 1e9,
                  s.decode_tps / summaries.front().decode_tps, s.types.c_str());
    }
  }
  return 0;
}
