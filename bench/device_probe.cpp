// The selected Vulkan device's ceilings (streaming read GB/s per access pattern, FMA GFLOP/s):
// the denominators of every performance ratio in bench/ (issue 13).
//   vks_bench_device_probe [--device SEL] [--mib N] [--passes N]
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "bench/device_ceiling.h"
#include "engine/common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"vkstream device probe: streaming read and FMA ceilings of a Vulkan device"};
  std::string device_sel;
  int mib = 128, passes = 8;
  app.add_option("--device", device_sel, "device index or name substring (default: best / VKSTREAM_DEVICE)");
  app.add_option("--mib", mib, "buffer size in MiB (clipped to the device's storage-buffer range)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--passes", passes, "reads of the buffer per timed submit")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  try {
    vks::vk::DeviceOptions options;
    options.selector = device_sel;
    vks::vk::Device device = vks::vk::Device::create(options);
    vks::vk::KernelRegistry kernels(device);
    vks::bench::CeilingOptions co;
    co.buffer_bytes = uint64_t(mib) << 20;
    co.passes = passes;
    const vks::bench::DeviceCeiling c = vks::bench::measure_device_ceiling(device, kernels, co);
    std::printf("device: %s (%s)\n", device.info().name.c_str(), device.info().type_name.c_str());
    std::printf("read, contiguous run per invocation: %8.2f GB/s\n", c.run_read_gbs);
    std::printf("read, coalesced (GPU idiom):          %8.2f GB/s\n", c.coalesced_read_gbs);
    std::printf("read, texel fetch, run per invocation: %7.2f GB/s\n", c.texel_read_gbs);
    std::printf("streaming read ceiling:               %8.2f GB/s (%s)\n", c.read_gbs, c.read_pattern.c_str());
    std::printf("FMA ceiling:                          %8.2f GFLOP/s\n", c.fma_gflops);
    std::printf("dispatch + barrier, 1 workgroup:      %8.1f us\n", c.dispatch_us);
    std::printf("dispatch + barrier, 16 workgroups:    %8.1f us\n", c.dispatch_spread_us);
    return 0;
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "error [%s]: %s\n", std::string(vks::error_code_name(e.code())).c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
