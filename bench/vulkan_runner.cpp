// Prefill and decode throughput of the Vulkan runner on any llama GGUF:
//   vks_bench_vulkan_runner MODEL.gguf [--device SEL] [--prompt 128] [--gen 32] [--context 16]
//                           [--batches 1 4 8 16] [--reps 3] [--matvec-max N] [--profile]
// Prints the device, its ceilings measured in the same run (bench/device_ceiling: streaming read
// GB/s, FMA GFLOP/s) and one table: prefill tokens/s (one prompt of --prompt tokens in one step),
// decode tokens/s at batch 1, and aggregate decode tokens/s at 4, 8 and 16 sequences. Each row also
// gives the weight-matrix bandwidth and arithmetic it achieved as ratios to those ceilings: a step
// streams every weight matrix once (bytes / step time vs the read ceiling) and does one
// multiply-add per weight per token (2 * weights * tokens / step time vs the FMA ceiling). For small
// models, where the work is not the cost, each row gives the step's dispatches and its time as a ratio
// to their fixed cost (dispatches x the probe's time for one near-empty 16-workgroup dispatch), and
// the host time spent packing and recording one step before submitting it.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/device_ceiling.h"
#include "bench/runner_steps.h"
#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/runner/vulkan_runner.h"

namespace {

using Clock = std::chrono::steady_clock;
using vks::bench::BenchSeq;

void print_profile(const char* what, const std::map<std::string, double>& ms, int steps) {
  double total = 0;
  for (const auto& [k, v] : ms) total += v;
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [k, v] : ms) rows.emplace_back(v, k);
  std::sort(rows.rbegin(), rows.rend());
  std::printf("\nGPU time per step, %s (%.2f ms/step measured by timestamps):\n", what, total / steps);
  for (const auto& [v, k] : rows) std::printf("  %-16s %8.3f ms  %5.1f%%\n", k.c_str(), v / steps, 100.0 * v / total);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Vulkan runner throughput: prefill and batched decode tokens/s"};
  std::string path, device;
  int prompt = 128, gen = 32, reps = 3;
  std::vector<int> batches{1, 4, 8, 16};
  bool profile = false;
  int matvec_max = -1;
  int num_blocks = 0;
  int context = 16;
  app.add_option("model", path, "GGUF model file")->required();
  app.add_option("--device", device, "Vulkan device index or name substring");
  app.add_option("--prompt", prompt, "prefill prompt length")->check(CLI::Range(1, 4096));
  app.add_option("--gen", gen, "decode steps timed per batch size")->check(CLI::Range(1, 1024));
  app.add_option("--reps", reps, "prefill repetitions")->check(CLI::Range(1, 100));
  app.add_option("--batches", batches, "decode batch sizes")->check(CLI::Range(1, 256));
  app.add_option("--matvec-max", matvec_max, "largest batch using matvec kernels (-1: kernels' choice)");
  app.add_option("--context", context, "prompt tokens of each decoding sequence (not timed)")->check(CLI::Range(1, 4096));
  app.add_option("--num-blocks", num_blocks, "KV blocks (0: enough for the benchmark)");
  app.add_flag("--profile", profile, "print per-op GPU time (timestamps) for prefill and every decode batch size");
  bool no_replay = false;
  app.add_flag("--no-replay", no_replay, "record every decode step anew instead of replaying its recording");
  CLI11_PARSE(app, argc, argv);

  try {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines appear as they are measured
    spdlog::set_level(spdlog::level::warn);
    auto model = vks::LlamaModel::load(path);
    const int max_batch = *std::max_element(batches.begin(), batches.end());
    vks::RunnerOptions o;
    o.device = device;
    o.max_step_tokens = std::max(prompt, max_batch * context);
    o.max_step_seqs = max_batch;
    o.max_context = std::max(prompt, context) + gen + 64;
    o.matvec_max_tokens = matvec_max;
    o.replay_decode_steps = !no_replay;
    o.num_blocks = num_blocks > 0 ? num_blocks : vks::bench::bench_num_blocks(o.block_size, max_batch, context, gen, prompt);
    // The device's ceilings, on a second handle to the same device, before the runner starts.
    vks::bench::DeviceCeiling ceiling;
    {
      vks::vk::DeviceOptions probe_options;
      probe_options.selector = device;
      vks::vk::Device probe_device = vks::vk::Device::create(probe_options);
      vks::vk::KernelRegistry probe_kernels(probe_device);
      ceiling = vks::bench::measure_device_ceiling(probe_device, probe_kernels);
    }
    const vks::bench::MatrixTotals matrices = vks::bench::matrix_totals(model->weights());
    const auto t_load = Clock::now();
    vks::VulkanRunner runner(*model, o);
    const double load_s = std::chrono::duration<double>(Clock::now() - t_load).count();
    const vks::LlamaConfig& c = model->config();
    std::printf("device: %s\n", runner.device_name().c_str());
    std::printf("model:  %s (dim %u, %u layers, %u heads / %u kv, hidden %u, vocab %u, %s weights), start-up %.1f s\n",
                path.c_str(), c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.hidden_dim, c.vocab_size,
                std::string(vks::ggml_type_name(model->weights().layers.at(0).wq.type)).c_str(), load_s);

    std::printf("ceiling: streaming read %.2f GB/s (%s), FMA %.2f GFLOP/s, dispatch + barrier %.1f us (1 workgroup) / "
                "%.1f us (16) (measured in this run)\n",
                ceiling.read_gbs, ceiling.read_pattern.c_str(), ceiling.fma_gflops, ceiling.dispatch_us,
                ceiling.dispatch_spread_us);
    std::printf("weight matrices: %.1f MB, %.1f M weights streamed per step\n", matrices.bytes / 1e6,
                matrices.weights / 1e6);

    vks::bench::StepDriver bench(runner, 42);
    std::vector<BenchSeq> seqs;
    // Prefill: warm-up then the best of `reps` single-step prompts.
    double best = 1e30;
    runner.set_profiling(false);
    for (int r = 0; r <= reps; ++r) {  // run 0 warms up
      seqs.assign(1, BenchSeq{});
      const double dt = bench.step(seqs, prompt);
      if (r > 0) best = std::min(best, dt);
      bench.release(seqs);
    }
    const uint32_t prefill_dispatches = runner.last_dispatch_count();
    const double prefill_record_ms = runner.last_record_ms();
    if (profile) {
      runner.set_profiling(true);
      seqs.assign(1, BenchSeq{});
      bench.step(seqs, prompt);
      bench.release(seqs);
    }
    if (profile) print_profile(fmt::format("prefill {}", prompt).c_str(), runner.profile(), 1);
    runner.set_profiling(false);
    struct Row {
      std::string name;
      double tok_s, ms_step;
      int tokens_per_step;
      uint32_t dispatches;
      double record_ms;  // host time packing and recording the step (VulkanRunner::last_record_ms)
    };
    std::vector<Row> rows{{fmt::format("prefill {} tokens", prompt), prompt / best, best * 1e3, prompt,
                           prefill_dispatches, prefill_record_ms}};
    std::printf("prefill: %.2f tokens/s\n", prompt / best);

    for (int b : batches) {
      seqs.assign(static_cast<size_t>(b), BenchSeq{});
      bench.step(seqs, context);  // every sequence's prompt (not timed)
      bench.step(seqs, 1);   // warm-up decode
      double total = 0, record_ms = 0;
      int replayed = 0;
      for (int i = 0; i < gen; ++i) {
        total += bench.step(seqs, 1);
        record_ms += runner.last_record_ms();
        replayed += runner.last_step_replayed() ? 1 : 0;
      }
      rows.push_back({b == 1 ? "decode batch 1" : fmt::format("decode {} seqs (aggregate)", b), b * gen / total,
                      total / gen * 1e3, b, runner.last_dispatch_count(), record_ms / gen});
      std::printf("decode x%d: %.2f tokens/s (%d of %d steps replayed)\n", b, b * gen / total, replayed, gen);
      if (profile) {
        runner.set_profiling(true);
        for (int i = 0; i < 4; ++i) bench.step(seqs, 1);
        print_profile(fmt::format("decode batch {}", b).c_str(), runner.profile(), 4);
        runner.set_profiling(false);
      }
      bench.release(seqs);
    }
    // x floor: the step's time over its dispatches' fixed cost (count x the probe's 16-workgroup
    // dispatch time); near 1, the step is all dispatch overhead and only fewer dispatches help.
    // host ms: the step's packing and recording on the host, before its submission (a replayed
    // decode step only packs and stages its inputs).
    std::printf("\n| %-28s | %10s | %9s | %8s | %7s | %8s | %7s | %10s | %7s | %8s |\n", "test", "tokens/s", "ms/step",
                "GB/s", "x read", "GFLOP/s", "x FMA", "dispatches", "x floor", "host ms");
    std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(30, '-').c_str(), std::string(12, '-').c_str(),
                std::string(11, '-').c_str(), std::string(10, '-').c_str(), std::string(9, '-').c_str(),
                std::string(10, '-').c_str(), std::string(9, '-').c_str(), std::string(12, '-').c_str(),
                std::string(9, '-').c_str(), std::string(10, '-').c_str());
    for (const Row& r : rows) {
      const double step_s = r.ms_step / 1e3;
      const double gbs = matrices.bytes / step_s / 1e9;
      const double gflops = 2.0 * matrices.weights * r.tokens_per_step / step_s / 1e9;
      const double floor_ms = vks::bench::dispatch_floor_ms(ceiling, r.dispatches);
      std::printf("| %-28s | %10.2f | %9.2f | %8.2f | %7.3f | %8.2f | %7.3f | %10u | %7.2f | %8.3f |\n",
                  r.name.c_str(), r.tok_s, r.ms_step, gbs, vks::bench::ratio(gbs, ceiling.read_gbs), gflops,
                  vks::bench::ratio(gflops, ceiling.fma_gflops), r.dispatches, vks::bench::ratio(r.ms_step, floor_ms),
                  r.record_ms);
    }
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "error (%s): %s\n", std::string(vks::error_code_name(e.code())).c_str(), e.what());
    return 1;
  }
  return 0;
}
