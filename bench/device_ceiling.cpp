#include "bench/device_ceiling.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/vulkan/core/command.h"

namespace vks::bench {
namespace {

struct ProbeParams {  // push block of the probe_*.comp kernels (16 bytes)
  uint32_t a = 0, b = 0, pad0 = 0, pad1 = 0;
};

// Best wall time of `trials` submits of `record`ed dispatches.
template <typename Record>
double best_seconds(const vk::Device& device, int trials, Record record) {
  vk::CommandBuffer cmd = device.create_command_buffer();
  cmd.begin();
  record(cmd);
  cmd.end();
  device.submit_and_wait(cmd);  // first dispatch compiles the pipeline (lavapipe): not timed
  double best = 1e30;
  for (int t = 0; t < trials; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    device.submit_and_wait(cmd);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

DeviceCeiling measure_device_ceiling(const vk::Device& device, vk::KernelRegistry& kernels,
                                     const CeilingOptions& options) {
  DeviceCeiling c;
  // A GPU streams 128 MiB in tens of microseconds and needs hundreds of thousands of loads in
  // flight: there the buffer is larger and the grids wider (the H100 probe reached 360-768 GB/s of
  // its ~3 TB/s with lavapipe-sized grids). On a CPU device the extra patterns would only add
  // seconds of slow reads to every benchmark.
  const bool gpu = device.info().type != VK_PHYSICAL_DEVICE_TYPE_CPU;
  uint64_t bytes = gpu ? std::max<uint64_t>(options.buffer_bytes, 1ull << 30) : options.buffer_bytes;
  if (device.info().max_storage_buffer_range > 0) bytes = std::min(bytes, device.info().max_storage_buffer_range);
  bytes -= bytes % 16;
  const uint32_t n_vec4 = static_cast<uint32_t>(bytes / 16);
  vk::Buffer data = device.create_buffer(bytes);
  {
    std::vector<uint32_t> words(bytes / 4);
    for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint32_t>(i * 2654435761u);
    device.upload(data, 0, words.data(), bytes);
  }
  const uint64_t max_invocations = n_vec4;  // upper bound for every pattern below
  vk::Buffer out = device.create_buffer(max_invocations * 4);
  const double streamed = double(bytes) * options.passes;

  // Each invocation its own contiguous run; a few run lengths (all far below the loop limit),
  // through a storage buffer and through a texel view.
  auto best_run_read = [&](const vk::Kernel& kernel) {
    double best = 0;
    for (uint32_t run_vec4 : {256u, 1024u, 4096u}) {
      ProbeParams p{n_vec4, run_vec4, 0, 0};
      const uint32_t invocations = static_cast<uint32_t>(vk::ceil_div(n_vec4, run_vec4));
      const vk::Groups groups{static_cast<uint32_t>(vk::ceil_div(invocations, 8)), 1, 1};
      const double s = best_seconds(device, options.trials, [&](vk::CommandBuffer& cmd) {
        for (int i = 0; i < options.passes; ++i) {
          cmd.dispatch(kernel, {data.view(), out.view()}, p, groups);
          cmd.barrier(vk::Stage::kCompute, vk::Stage::kCompute);
        }
      });
      best = std::max(best, streamed / s / 1e9);
    }
    return best;
  };
  c.run_read_gbs = best_run_read(kernels.get("probe_runread_u32"));
  if (data.texel_view() != VK_NULL_HANDLE) c.texel_read_gbs = best_run_read(kernels.get("probe_texread_u32"));
  // Neighbouring invocations, neighbouring words (grid-stride loop).
  {
    const vk::Kernel& coal = kernels.get("probe_coalread_u32");
    const uint32_t max_groups = std::max<uint32_t>(1, device.info().max_workgroup_count[0]);
    std::vector<uint64_t> per_invocation{1024};  // uvec4 each invocation reads
    if (gpu) per_invocation.insert(per_invocation.end(), {64, 16, 4});
    for (uint64_t each : per_invocation) {
      const uint32_t n_groups = static_cast<uint32_t>(
          std::clamp<uint64_t>(vk::ceil_div(n_vec4, 64ull * each), 1, max_groups));
      ProbeParams p{n_vec4, 0, 0, 0};
      const double s = best_seconds(device, options.trials, [&](vk::CommandBuffer& cmd) {
        for (int i = 0; i < options.passes; ++i) {
          cmd.dispatch(coal, {data.view(), out.view()}, p, vk::Groups{n_groups, 1, 1});
          cmd.barrier(vk::Stage::kCompute, vk::Stage::kCompute);
        }
      });
      c.coalesced_read_gbs = std::max(c.coalesced_read_gbs, streamed / s / 1e9);
    }
  }
  c.read_gbs = std::max({c.run_read_gbs, c.coalesced_read_gbs, c.texel_read_gbs});
  c.read_pattern = c.read_gbs == c.texel_read_gbs  ? "texel fetch, contiguous run per invocation"
                   : c.read_gbs == c.run_read_gbs ? "contiguous run per invocation"
                                                  : "coalesced";

  // FMA: 8 independent vec4 chains per invocation, 64 flops per iteration.
  {
    const vk::Kernel& fma = kernels.get("probe_fma_f32");
    const float seed[8] = {0.999f, 0.999f, 0.999f, 0.999f, 0.001f, 0.001f, 0.001f, 0.001f};
    device.upload(data, 0, seed, sizeof(seed));
    const uint32_t n_groups = gpu ? 4096 : 64, iterations = 4096;  // workgroups of 64 invocations
    ProbeParams p{iterations, 0, 0, 0};
    const double s = best_seconds(device, options.trials, [&](vk::CommandBuffer& cmd) {
      cmd.dispatch(fma, {data.view(), out.view()}, p, vk::Groups{n_groups, 1, 1});
    });
    c.fma_gflops = double(n_groups) * 64 * iterations * 64 / s / 1e9;
  }

  // Dispatch floor: near-empty dispatches of the FMA probe (no iterations), each followed by a
  // compute barrier as a runner step records them; 64 per submit, so the submit's own cost is
  // shared. With one workgroup and with 16 (lavapipe runs a single workgroup on the submitting
  // thread but hands several to its worker threads).
  {
    const vk::Kernel& fma = kernels.get("probe_fma_f32");
    constexpr int kDispatches = 64;
    const ProbeParams p{0, 0, 0, 0};
    const auto dispatch_us = [&](uint32_t groups) {
      const double s = best_seconds(device, options.trials, [&](vk::CommandBuffer& cmd) {
        for (int i = 0; i < kDispatches; ++i) {
          cmd.dispatch(fma, {data.view(), out.view()}, p, vk::Groups{groups, 1, 1});
          cmd.barrier(vk::Stage::kCompute, vk::Stage::kCompute);
        }
      });
      return s / kDispatches * 1e6;
    };
    c.dispatch_us = dispatch_us(1);
    c.dispatch_spread_us = dispatch_us(16);
  }
  return c;
}

}  // namespace vks::bench
