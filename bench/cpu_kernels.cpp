// The quantized CPU kernels (engine/cpu/quant) on TinyLlama-1.1B-shape matrices: matvec GB/s of
// weights read (decode) beside a plain-C memory read probe measured in the same run, GFLOP/s at
// 128 tokens (prefill), and the speedup over ref::matmul (the float CPU reference) in the same run.
// Matvec cycles over copies of the matrix that together exceed the caches, as decode does.
// Shared machines are noisy: read the ratios, measured back to back, rather than the absolutes.
//   vks_bench_cpu_kernels [--types q4_0 q8_0 q4_K q6_K] [--threads 1 2] [--tokens 128] [--no-ref]
//   vks_bench_cpu_kernels --sweep 17 [--shapes output]   (microseconds per call at 1..17 tokens, the
//     weights from memory as a decode or verify step reads them, and in cache: what a speculative
//     verify step of k+1 tokens costs beside a one-token step)
//   VKSTREAM_CPU_ISA=avx vks_bench_cpu_kernels   (the 128-bit level on an AVX2 machine)
//   vks_bench_cpu_kernels --packed [--packed-tokens 1 2 4 8 16 128]   (the level's packed types on
//     the GGUF layout against the same matrix packed in groups of 16 rows, packed_rows.h: time per
//     call from memory and in cache, rounds alternating the two, the best round of each)
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/process_cpu.h"
#include "bench/huge_page_buffer.h"
#include "bench/read_probe.h"
#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/packed_rows.h"
#include "engine/cpu/quant/qmatmul.h"
#include "engine/cpu/reference_ops.h"
#include "engine/gguf/ggml_type.h"

namespace {

using Clock = std::chrono::steady_clock;
using vks::GgmlType;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

constexpr size_t kCacheDefeatBytes = size_t{256} << 20;  // more than any L3 here

// A [rows, cols] matrix of the type: 64 random rows quantized once and repeated (quantizing the
// largest matrices row by row would take longer than the benchmark).
std::vector<uint8_t> make_matrix(GgmlType type, size_t rows, size_t cols) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t row_bytes = vks::ggml_row_size(type, cols);
  const size_t distinct = std::min<size_t>(64, rows);
  std::vector<uint8_t> seed(distinct * row_bytes);
  std::vector<float> row(cols);
  for (size_t r = 0; r < distinct; ++r) {
    for (float& v : row) v = normal(rng) * 0.02f;
    vks::quantize_row(type, row.data(), seed.data() + r * row_bytes, cols);
  }
  std::vector<uint8_t> out(rows * row_bytes);
  for (size_t r = 0; r < rows; ++r) std::memcpy(out.data() + r * row_bytes, seed.data() + (r % distinct) * row_bytes, row_bytes);
  return out;
}

vks::TensorRef tensor(GgmlType type, size_t rows, size_t cols, const uint8_t* data) {
  vks::TensorRef t;
  t.name = "bench";
  t.type = type;
  t.rows = rows;
  t.cols = cols;
  t.data = data;
  t.nbytes = rows * vks::ggml_row_size(type, cols);
  return t;
}

// A matrix and enough copies of it that cycling through them reads from memory, as every decode
// or verify step reads the weights anew; the first copy alone stays in cache.
struct MatrixCopies {
  GgmlType type;
  size_t rows, cols, bytes, copies;
  vks::bench::HugePageBuffer all;  // huge pages, as the CPU backend's weights
  vks::WeightLayout layout;
  // packed: the copies in WeightLayout::kRows16 (the CPU runner's copy for the amx level).
  MatrixCopies(GgmlType t, size_t r, size_t c, bool packed = false)
      : type(t), rows(r), cols(c), bytes(r * vks::ggml_row_size(t, c)),
        copies(std::max<size_t>(1, (kCacheDefeatBytes + bytes - 1) / bytes)), all(copies * bytes),
        layout(packed ? vks::WeightLayout::kRows16 : vks::WeightLayout::kGguf) {
    std::vector<uint8_t> one = make_matrix(t, r, c);
    if (packed) {
      std::vector<uint8_t> gguf = std::move(one);
      one.resize(bytes);
      vks::cpuq::pack_rows16(tensor(t, r, c, gguf.data()), one.data());
    }
    for (size_t i = 0; i < copies; ++i) std::memcpy(all.data() + i * bytes, one.data(), bytes);
  }
  vks::TensorRef next(size_t i) const { return with_layout(tensor(type, rows, cols, all.data() + (i % copies) * bytes)); }
  vks::TensorRef first() const { return with_layout(tensor(type, rows, cols, all.data())); }

 private:
  vks::TensorRef with_layout(vks::TensorRef t) const {
    t.layout = layout;
    return t;
  }
};

// Wall and process CPU seconds per call of fn, run at least min_seconds (after a warm-up call).
// On a shared machine the CPU time shows the work itself when other processes stretch the wall time.
struct PerCall {
  double wall = 0;
  double cpu = 0;
};
template <class Fn>
PerCall time_per_call(double min_seconds, const Fn& fn) {
  fn();
  size_t calls = 0;
  const double cpu0 = vks::bench::process_cpu_seconds();
  const Clock::time_point start = Clock::now();
  do {
    fn();
    ++calls;
  } while (seconds_since(start) < min_seconds);
  const double n = static_cast<double>(calls);
  return {seconds_since(start) / n, (vks::bench::process_cpu_seconds() - cpu0) / n};
}

// The fastest of the calls of fn run in at least min_seconds (after a warm-up call): on a shared
// machine the calls another process interrupted are slower, never faster.
template <class Fn>
double fastest_call(double min_seconds, const Fn& fn) {
  fn();
  double best = 1e30;
  const Clock::time_point start = Clock::now();
  do {
    const Clock::time_point t0 = Clock::now();
    fn();
    best = std::min(best, seconds_since(t0));
  } while (seconds_since(start) < min_seconds);
  return best;
}

struct Shape {
  size_t rows, cols;
  const char* what;
};

// Microseconds of the fastest qmatmul call at 1..max_tokens tokens: from memory (cycling over copies of the
// matrix, as every decode or verify step reads the weights anew) and in cache (one copy), each
// beside the one-token time of the same run.
template <class Wanted>
int run_sweep(const std::vector<std::string>& type_names, const std::vector<int>& thread_counts,
              const Shape (&shapes)[4], const Wanted& wanted, size_t max_tokens, double min_seconds) {
  std::printf("ISA level %s; the fastest call: us from memory (x one token), us in cache (x one token)\n",
              std::string(vks::cpuq::isa_name(vks::cpuq::active_isa())).c_str());
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const std::string& name : type_names) {
    const std::optional<GgmlType> type = vks::ggml_type_from_name(name);
    if (!type) {
      std::fprintf(stderr, "unknown type %s\n", name.c_str());
      return 1;
    }
    for (const Shape& s : shapes) {
      if (!wanted(s)) continue;
      const MatrixCopies m(*type, s.rows, s.cols);
      std::vector<float> x(max_tokens * s.cols);
      for (float& v : x) v = normal(rng);
      std::vector<float> y(max_tokens * s.rows);
      for (const int threads : thread_counts) {
        vks::ThreadPool pool(threads);
        double cold1 = 0, warm1 = 0;
        for (size_t t = 1; t <= max_tokens; ++t) {
          size_t next = 0;
          const double cold = fastest_call(min_seconds, [&] {
            const vks::TensorRef w = m.next(next++);
            vks::cpuq::qmatmul(w, x.data(), t, y.data(), &pool);
          });
          const vks::TensorRef w0 = m.first();
          const double warm = fastest_call(min_seconds, [&] { vks::cpuq::qmatmul(w0, x.data(), t, y.data(), &pool); });
          if (t == 1) {
            cold1 = cold;
            warm1 = warm;
          }
          std::printf("%-6s %-7s %zux%zu thr %d tokens %2zu: %9.1f us (%5.2fx) %9.1f us (%5.2fx)\n", name.c_str(), s.what,
                      s.rows, s.cols, threads, t, cold * 1e6, cold / cold1, warm * 1e6, warm / warm1);
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

// The level's packed types (Q4_0, Q8_0 and the K-quants, from AVX-512 VNNI on) on the GGUF
// layout against the same matrix packed (packed_rows.h): per token count, the mean wall time per
// call from memory (cycling over copies) and in cache, `rounds` rounds alternating the two layouts,
// the best round of each; weight GB/s from memory and the speedup (GGUF time / packed time).
template <class Wanted>
int run_packed(const std::vector<std::string>& type_names, const std::vector<int>& thread_counts,
               const Shape (&shapes)[4], const Wanted& wanted, const std::vector<size_t>& token_counts,
               double min_seconds, int rounds) {
  std::printf("ISA level %s; mean us per call, best of %d alternating rounds: GGUF layout, packed, speedup\n",
              std::string(vks::cpuq::isa_name(vks::cpuq::active_isa())).c_str(), rounds);
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t max_tokens = *std::max_element(token_counts.begin(), token_counts.end());
  for (const std::string& name : type_names) {
    const std::optional<GgmlType> type = vks::ggml_type_from_name(name);
    if (!type || !vks::cpuq::packs_rows16(*type, vks::cpuq::active_isa())) {
      std::fprintf(stderr, "%s: no packed layout at this level\n", name.c_str());
      return 1;
    }
    for (const Shape& s : shapes) {
      if (!wanted(s)) continue;
      const MatrixCopies gguf(*type, s.rows, s.cols), packed(*type, s.rows, s.cols, true);
      std::vector<float> x(max_tokens * s.cols);
      for (float& v : x) v = normal(rng);
      std::vector<float> y(max_tokens * s.rows);
      const double gb = static_cast<double>(gguf.bytes) / 1e9;
      for (const int threads : thread_counts) {
        vks::ThreadPool pool(threads);
        for (const size_t t : token_counts) {
          double cold[2] = {1e30, 1e30}, warm[2] = {1e30, 1e30};
          for (int round = 0; round < rounds; ++round) {
            for (int which = 0; which < 2; ++which) {
              const MatrixCopies& m = which == 0 ? gguf : packed;
              size_t next = 0;
              cold[which] = std::min(cold[which], time_per_call(min_seconds, [&] {
                                                    vks::cpuq::qmatmul(m.next(next++), x.data(), t, y.data(), &pool);
                                                  }).wall);
              const vks::TensorRef w0 = m.first();
              warm[which] = std::min(
                  warm[which], time_per_call(min_seconds, [&] { vks::cpuq::qmatmul(w0, x.data(), t, y.data(), &pool); }).wall);
            }
          }
          std::printf("%-6s %4zux%-4zu thr %d tokens %3zu: memory %9.1f %9.1f us (%5.1f %5.1f GB/s) %5.2fx"
                      "  cache %9.1f %9.1f us %5.2fx\n",
                      name.c_str(), s.rows, s.cols, threads, t, cold[0] * 1e6, cold[1] * 1e6, gb / cold[0], gb / cold[1],
                      cold[0] / cold[1], warm[0] * 1e6, warm[1] * 1e6, warm[0] / warm[1]);
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Quantized CPU kernels: matvec GB/s and GEMM GFLOP/s on TinyLlama-shape matrices"};
  std::vector<std::string> type_names = {"q4_0", "q8_0", "q4_K", "q6_K"};
  std::vector<int> thread_counts = {1, 2};
  size_t tokens = 128;
  bool no_ref = false;
  double min_seconds = 0.4;
  app.add_option("--types", type_names, "weight types");
  app.add_option("--threads", thread_counts, "thread counts");
  app.add_option("--tokens", tokens, "tokens of the GEMM (prefill)");
  app.add_option("--seconds", min_seconds, "minimum seconds per measurement");
  app.add_flag("--no-ref", no_ref, "skip ref::matmul (the float reference) for speed");
  size_t sweep = 0;
  app.add_option("--sweep", sweep, "instead of the table: per-call times at 1..N tokens");
  std::vector<std::string> shape_names;
  app.add_option("--shapes", shape_names, "only these shapes (wq/wo gate/up down output)");
  bool packed = false;
  app.add_flag("--packed", packed, "instead of the table: the GGUF layout against the packed one (types the "
                                   "level packs: q4_0 q8_0 and the K-quants from AVX-512 VNNI; default "
                                   "q4_0 q8_0 q4_K q6_K, shapes wq/wo gate/up)");
  std::vector<size_t> packed_tokens = {1, 2, 4, 8, 16, 128};
  app.add_option("--packed-tokens", packed_tokens, "token counts of --packed");
  int rounds = 2;
  app.add_option("--rounds", rounds, "alternating rounds of --packed");
  CLI11_PARSE(app, argc, argv);

  const Shape shapes[] = {{2048, 2048, "wq/wo"}, {5632, 2048, "gate/up"}, {2048, 5632, "down"}, {32000, 2048, "output"}};

  const auto wanted = [&](const Shape& s) {
    return shape_names.empty() || std::find(shape_names.begin(), shape_names.end(), s.what) != shape_names.end();
  };
  if (packed) {
    if (app.count("--types") == 0) type_names = {"q4_0", "q8_0", "q4_K", "q6_K"};
    if (shape_names.empty()) shape_names = {"wq/wo", "gate/up"};
    return run_packed(type_names, thread_counts, shapes, wanted, packed_tokens, min_seconds, rounds);
  }
  if (sweep > 0) return run_sweep(type_names, thread_counts, shapes, wanted, sweep, min_seconds);

  std::printf("ISA level %s (detected %s); plain-C read probe:", std::string(vks::cpuq::isa_name(vks::cpuq::active_isa())).c_str(),
              std::string(vks::cpuq::isa_name(vks::cpuq::detected_isa())).c_str());
  std::vector<double> probe;
  for (int threads : thread_counts) {
    probe.push_back(vks::bench::read_probe_gbs(threads));
    std::printf(" %.1f GB/s at %d thread%s", probe.back(), threads, threads == 1 ? "" : "s");
  }
  std::printf("\n(per core: per second of process CPU time, i.e. per busy core)\n");
  std::printf("%-6s %-11s %3s %9s %6s %7s %9s %8s %10s %9s %8s %11s\n", "type", "shape", "thr", "matvec us", "GB/s",
              "% probe", "GB/s/core", "GFLOP/s", "GF/s/core", "ref GF/s", "ref GB/s", "vs ref mv/mm");

  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const std::string& name : type_names) {
    const std::optional<GgmlType> type = vks::ggml_type_from_name(name);
    if (!type) {
      std::fprintf(stderr, "unknown type %s\n", name.c_str());
      return 1;
    }
    for (const Shape& s : shapes) {
      if (!wanted(s)) continue;
      const MatrixCopies m(*type, s.rows, s.cols);
      std::vector<float> x(tokens * s.cols);
      for (float& v : x) v = normal(rng);
      std::vector<float> y(tokens * s.rows);
      for (size_t ti = 0; ti < thread_counts.size(); ++ti) {
        const int threads = thread_counts[ti];
        vks::ThreadPool pool(threads);
        size_t next = 0;
        const PerCall mv = time_per_call(min_seconds, [&] {
          const vks::TensorRef w = m.next(next++);
          vks::cpuq::qmatmul(w, x.data(), 1, y.data(), &pool);
        });
        const vks::TensorRef w0 = m.first();
        const PerCall mm = time_per_call(min_seconds, [&] { vks::cpuq::qmatmul(w0, x.data(), tokens, y.data(), &pool); });
        const double flops = 2.0 * static_cast<double>(s.rows * s.cols * tokens);
        PerCall ref_mv, ref_mm;
        if (!no_ref) {
          next = 0;
          ref_mv = time_per_call(min_seconds, [&] {
            const vks::TensorRef w = m.next(next++);
            vks::ref::matmul(w, x.data(), 1, y.data(), &pool);
          });
          ref_mm = time_per_call(0.0, [&] { vks::ref::matmul(w0, x.data(), tokens, y.data(), &pool); });
        }
        const double gb = static_cast<double>(m.bytes) / 1e9;
        char shape[32];
        std::snprintf(shape, sizeof shape, "%zux%zu", s.rows, s.cols);
        std::printf("%-6s %-11s %3d %9.1f %6.2f %6.0f%% %9.2f %8.1f %10.1f", name.c_str(), shape, threads,
                    mv.wall * 1e6, gb / mv.wall, 100.0 * gb / mv.wall / probe[ti], gb / mv.cpu, flops / mm.wall / 1e9,
                    flops / mm.cpu / 1e9);
        if (no_ref) {
          std::printf("\n");
        } else {
          std::printf(" %9.2f %8.2f %5.1fx/%4.1fx\n", flops / ref_mm.wall / 1e9, gb / ref_mv.wall, ref_mv.wall / mv.wall,
                      ref_mm.wall / mm.wall);
        }
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
