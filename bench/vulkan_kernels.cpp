// Micro-benchmark of the core matrix kernels on the chosen Vulkan device: for each weight type and
// token count, the time of one matvec/matmul over a rows x cols matrix (default 5632 x 2048 and
// 2048 x 5632, TinyLlama's FFN shapes), the weight bytes streamed per second and GFLOP/s.
// Both kernel families run unless --kernels says otherwise (rows: matvec/matmul, lanes: matlanes).
//   vks_bench_vulkan_kernels [--device SEL] [--types q4_0,q8_0,f16] [--tokens 1,2,4,8,16,64] [--reps N]
//                            [--kernels rows,lanes] [--shapes 5632x2048,64x64]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/device_ceiling.h"
#include "bench/process_cpu.h"
#include "engine/common/error.h"
#include "engine/gguf/ggml_type.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/kernel.h"
#include "engine/vulkan/kernels/device_matrix.h"
#include "engine/vulkan/kernels/ops.h"
#include "engine/vulkan/shaders/shader_params.h"

namespace {

using namespace vks;
using namespace vks::vk;

using bench::process_cpu_seconds;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

GgmlType parse_type(const std::string& name) {
  // Names come from the one table of weight formats (engine/gguf/ggml_type.cpp).
  if (const std::optional<GgmlType> t = ggml_type_from_name(name)) return *t;
  throw Error(ErrorCode::kInvalidArgument, "unknown type " + name);
}

std::vector<uint8_t> random_matrix(GgmlType type, uint64_t rows, uint64_t cols) {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(cols);
  const size_t row_bytes = ggml_row_size(type, cols);
  std::vector<uint8_t> out(rows * row_bytes);
  for (uint64_t r = 0; r < rows; ++r) {
    for (float& f : row) f = dist(rng);
    if (type == GgmlType::kF32) {
      std::memcpy(out.data() + r * row_bytes, row.data(), cols * 4);
    } else {
      quantize_row(type, row.data(), out.data() + r * row_bytes, cols);
    }
  }
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> parse_shapes(const std::string& list) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const std::string& item : split_list(list)) {
    unsigned long long rows = 0, cols = 0;
    char extra = 0;
    if (std::sscanf(item.c_str(), "%llux%llu%c", &rows, &cols, &extra) != 2 || rows == 0 || cols == 0) {
      throw Error(ErrorCode::kInvalidArgument, "shape " + item + " is not ROWSxCOLS");
    }
    out.emplace_back(rows, cols);
  }
  return out;
}

int run(int argc, char** argv) {
  CLI::App app{"vkstream core-kernel benchmark (matvec/matmul bandwidth)"};
  std::string device_sel, types = "q4_0,q8_0,f16", tokens = "1,2,4,8,16,64", families = "rows,lanes";
  std::string shape_list = "5632x2048,2048x5632";
  int reps = 20;
  app.add_option("--device", device_sel, "device index or name substring (default: best / VKSTREAM_DEVICE)");
  app.add_option("--types", types, "weight types");
  app.add_option("--tokens", tokens, "token counts (rows family: <= 8 matvec, else matmul; lanes: one kernel)");
  app.add_option("--kernels", families, "matrix kernel families: rows (CPU devices' default), lanes (GPUs')");
  app.add_option("--shapes", shape_list, "ROWSxCOLS matrices (small ones show a kernel's fixed cost)");
  app.add_option("--reps", reps, "dispatches timed per measurement")->check(CLI::Range(1, 10000));
  CLI11_PARSE(app, argc, argv);

  DeviceOptions options;
  options.selector = device_sel;
  Device device = Device::create(options);
  KernelRegistry kernels(device);
  kernels.create_all();
  std::vector<Ops> family_ops;
  for (const std::string& f : split_list(families)) family_ops.emplace_back(kernels, choose_matmul_family(device.info(), f));
  std::printf("device: %s (%s, %s)\n", device.info().name.c_str(), device.info().type_name.c_str(),
              device.info().driver.c_str());
  // The device's own ceilings, measured in this run: every figure below is also a ratio to them.
  const bench::DeviceCeiling ceiling = bench::measure_device_ceiling(device, kernels);
  std::printf("ceiling: streaming read %.2f GB/s (%s), FMA %.2f GFLOP/s, dispatch %.1f us (1 group) / %.1f us (16)\n",
              ceiling.read_gbs, ceiling.read_pattern.c_str(), ceiling.fma_gflops, ceiling.dispatch_us,
              ceiling.dispatch_spread_us);
  std::printf("%-6s %-11s %6s %-7s %10s %10s %9s %9s %12s %7s %7s\n", "type", "shape", "tokens", "kernel", "us/call",
              "weight MB", "GB/s", "GFLOP/s", "cpu-us/call", "read", "fma");

  const std::vector<std::pair<uint64_t, uint64_t>> shapes = parse_shapes(shape_list);
  for (const std::string& type_name : split_list(types)) {
    const GgmlType type = parse_type(type_name);
    for (const auto& [rows, cols] : shapes) {
      const std::vector<uint8_t> data = random_matrix(type, rows, cols);
      const DeviceMatrix m = upload_matrix(device, type, rows, cols, data.data());
      uint64_t weight_bytes = 0;
      for (const Buffer& b : m.storage.parts) weight_bytes += b.size();
      for (const Ops& ops : family_ops) {
        for (const std::string& tok : split_list(tokens)) {
          const uint32_t n = static_cast<uint32_t>(std::stoul(tok));
          Buffer x = device.create_buffer(uint64_t(n) * cols * 4);
          Buffer y = device.create_buffer(uint64_t(n) * rows * 4);
          std::vector<float> xv(uint64_t(n) * cols, 0.5f);
          device.upload(x, 0, xv.data(), xv.size() * 4);
          CommandBuffer cmd = device.create_command_buffer();
          auto record = [&](int count) {
            cmd.begin();
            for (int i = 0; i < count; ++i) {
              ops.matmul(cmd, m, x.view(), static_cast<uint32_t>(cols), y.view(), static_cast<uint32_t>(rows), n);
              cmd.barrier(Stage::kCompute, Stage::kCompute);
            }
            cmd.end();
          };
          record(2);  // warm-up
          device.submit_and_wait(cmd);
          record(reps);
          const auto t0 = std::chrono::steady_clock::now();
          const double cpu0 = process_cpu_seconds();
          device.submit_and_wait(cmd);
          const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
          const double cpu_sec = (process_cpu_seconds() - cpu0) / reps;
          char shape[32];
          std::snprintf(shape, sizeof(shape), "%llux%llu", static_cast<unsigned long long>(rows),
                        static_cast<unsigned long long>(cols));
          const double gbs = weight_bytes / sec / 1e9, gflops = 2.0 * rows * cols * n / sec / 1e9;
          const std::string kernel = ops.matmul_family() == MatmulFamily::kLanes ? "lanes"
                                     : n <= VKS_MATVEC_TOKEN_TILE               ? "matvec"
                                                                                : "matmul";
          std::printf("%-6s %-11s %6u %-7s %10.1f %10.2f %9.2f %9.2f %12.1f %7.2f %7.2f\n", type_name.c_str(), shape, n,
                      kernel.c_str(), sec * 1e6, weight_bytes / 1e6, gbs, gflops,
                      cpu_sec * 1e6, bench::ratio(gbs, ceiling.read_gbs), bench::ratio(gflops, ceiling.fma_gflops));
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "error [%s]: %s\n", std::string(vks::error_code_name(e.code())).c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
