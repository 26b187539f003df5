// Decode tokens/s of one model at a short and at a long context, alternating in one process, and
// their ratio long/short: how much a token's cost grows with the context it attends to. For a
// model whose layers slide a window (Gemma 3: 5 of 6 layers see the last 512 tokens only) only the
// global layers' attention grows, so decode at 16k should stay near its speed at 1k; a dense
// llama-shaped model's every layer reads the whole cache.
//   vks_bench_context_decode MODEL.gguf [MODEL2.gguf ...] [--short 1024] [--long 16384] [--gen 8]
//                            [--rounds 3] [--backend auto|cpu|vulkan] [--device SEL] [--fill] [--kv-type f16|q8_0]
// Without --fill a sequence is placed at its context length with its KV blocks allocated but not
// written (no prefill: 16k prompt tokens of a 1B model take many minutes on a small CPU). A decode
// step reads every cached position its layers attend to whatever the values are, so the cost is
// the same; --fill prefills the contexts for real, in chunks of --chunk tokens (untimed).
// Placed sequences read KV pages never written: the first steps at a long context also fault
// those pages in (the runner's attention reads the pools in place), so compare medians of several
// rounds, or use --fill.
// Rounds alternate: `gen` decode steps of the short sequence, then `gen` of the long one, so the
// load of a shared machine falls on both alike. Prints each side's median step, tokens/s and the
// ratio per model.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/runner_steps.h"
#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/runner/runner_factory.h"

namespace {

// "22 of 26 layers windowed (512), 4 global" and sinks/soft-caps where present.
std::string attention_summary(const vks::LlamaConfig& c) {
  uint32_t windowed = 0, sinks = 0;
  for (const vks::LayerSpec& l : c.layers) {
    windowed += l.attention.windowed() ? 1 : 0;
    sinks += l.attention.sinks ? 1 : 0;
  }
  std::string s = std::to_string(windowed) + " of " + std::to_string(c.n_layers) + " layers windowed";
  if (windowed > 0) s += " (window " + std::to_string(c.max_window()) + ")";
  s += ", " + std::to_string(c.n_layers - windowed) + " global";
  if (sinks > 0) s += ", sinks";
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Decode tokens/s at a short and a long context, alternating; prints long/short"};
  std::vector<std::string> paths;
  std::string backend = "auto", device;
  int short_ctx = 1024, long_ctx = 16384, gen = 8, rounds = 3, chunk = 512;
  bool fill = false;
  app.add_option("models", paths, "GGUF model files")->required();
  app.add_option("--short", short_ctx, "short context (tokens before the first timed step)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--long", long_ctx, "long context")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--gen", gen, "timed decode steps per side per round")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--rounds", rounds, "alternating rounds")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--backend", backend, "auto (the server's rule: CPU on lavapipe), cpu or vulkan")
      ->check(CLI::IsMember({"auto", "cpu", "vulkan"}))->capture_default_str();
  app.add_option("--device", device, "Vulkan device index or name substring");
  app.add_flag("--fill", fill, "prefill both contexts for real (untimed) instead of placing the sequences");
  app.add_option("--chunk", chunk, "prefill chunk with --fill")->check(CLI::Range(1, 8192))->capture_default_str();
  std::string kv_type = "f16";
  app.add_option("--kv-type", kv_type, "KV cache type of keys and values")
      ->check(CLI::IsMember({"f16", "q8_0", "q4_0"}))->capture_default_str();
  std::string split_keys;
  app.add_option("--attn-split-keys", split_keys,
                 "the lanes attention's keys per split (a multiple of 64; default: the device's own)");
  CLI11_PARSE(app, argc, argv);

  try {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    spdlog::set_level(spdlog::level::warn);
    struct Row {
      std::string file;
      double short_tps = 0, long_tps = 0, cpu_ratio = 0;
    };
    std::vector<Row> rows;
    for (const std::string& path : paths) {
      auto model = vks::LlamaModel::load(path);
      const vks::LlamaConfig& c = model->config();
      vks::RunnerOptions o;
      o.device = device;
      o.force_cpu = backend == "cpu";
      o.force_vulkan = backend == "vulkan";
      o.kv_type_k = o.kv_type_v = vks::parse_kv_type(kv_type);
      o.attention_split_keys = split_keys;
      const int steps = gen * (rounds + 1) + 2;
      o.max_context = long_ctx + steps + 16;
      o.max_step_tokens = fill ? chunk : 16;
      o.max_step_seqs = 2;
      o.num_blocks = (short_ctx + long_ctx + 2 * steps) / o.block_size + 8;
      std::unique_ptr<vks::ModelRunner> runner = vks::make_runner(*model, o);
      vks::bench::StepDriver driver(*runner, 7);

      std::printf("model %s: %s, dim %u, %u layers, heads %u/%u x %u, %s\n", path.c_str(), c.architecture.c_str(), c.dim,
                  c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, attention_summary(c).c_str());
      std::printf("runner %s, KV %s (%llu bytes a token), attention split keys %s, contexts %d and %d (%s), %d rounds of "
                  "%d decode steps per side\n",
                  runner->device_name().c_str(), runner->kv_type().c_str(),
                  static_cast<unsigned long long>(runner->kv_bytes_per_token()),
                  split_keys.empty() ? "the device's" : split_keys.c_str(), short_ctx, long_ctx,
                  fill ? "prefilled" : "placed, KV not written", rounds, gen);
      std::vector<vks::bench::BenchSeq> short_seq(1), long_seq(1);
      for (auto* seq : {&short_seq, &long_seq}) {
        const int target = seq == &short_seq ? short_ctx : long_ctx;
        if (fill) {
          while ((*seq)[0].n_past < target) driver.step(*seq, std::min(chunk, target - (*seq)[0].n_past));
        } else {
          (*seq)[0].n_past = target;
        }
        driver.step(*seq, 1);  // warm-up
      }
      std::vector<double> short_s, long_s, short_cpu, long_cpu;
      for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < gen; ++i) {
          short_s.push_back(driver.step(short_seq, 1));
          short_cpu.push_back(driver.last_cpu_seconds());
        }
        for (int i = 0; i < gen; ++i) {
          long_s.push_back(driver.step(long_seq, 1));
          long_cpu.push_back(driver.last_cpu_seconds());
        }
      }
      const double short_med = vks::bench::quantile(short_s, 0.5), long_med = vks::bench::quantile(long_s, 0.5);
      Row row{path.substr(path.find_last_of('/') + 1), 1.0 / short_med, 1.0 / long_med};
      std::printf("  context %6d: median step %8.2f ms, %8.2f tok/s (p10 %.2f ms, p90 %.2f ms)\n", short_ctx,
                  short_med * 1e3, row.short_tps, vks::bench::quantile(short_s, 0.1) * 1e3,
                  vks::bench::quantile(short_s, 0.9) * 1e3);
      std::printf("  context %6d: median step %8.2f ms, %8.2f tok/s (p10 %.2f ms, p90 %.2f ms)\n", long_ctx,
                  long_med * 1e3, row.long_tps, vks::bench::quantile(long_s, 0.1) * 1e3,
                  vks::bench::quantile(long_s, 0.9) * 1e3);
      // Process CPU seconds per step (user + system, all threads): less sensitive to other load on a
      // shared machine than wall time, though it counts spinning workers.
      const double short_cpu_med = vks::bench::quantile(short_cpu, 0.5), long_cpu_med = vks::bench::quantile(long_cpu, 0.5);
      row.cpu_ratio = short_cpu_med / long_cpu_med;
      std::printf("  process CPU per step: %.2f ms at %d, %.2f ms at %d (ratio short/long %.3f)\n", short_cpu_med * 1e3,
                  short_ctx, long_cpu_med * 1e3, long_ctx, row.cpu_ratio);
      std::printf("  long/short decode speed: %.3f\n\n", row.long_tps / row.short_tps);
      rows.push_back(row);
    }
    if (rows.size() > 1) {
      std::printf("| %-32s | %12s | %12s | %10s | %14s |\n", "model", "short tok/s", "long tok/s", "long/short",
                  "CPU-time ratio");
      for (const Row& r : rows) {
        std::printf("| %-32s | %12.2f | %12.2f | %10.3f | %14.3f |\n", r.file.c_str(), r.short_tps, r.long_tps,
                    r.long_tps / r.short_tps, r.cpu_ratio);
      }
    }
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "error (%s): %s\n", std::string(vks::error_code_name(e.code())).c_str(), e.what());
    return 1;
  }
  return 0;
}
