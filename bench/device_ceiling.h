#pragma once
// What the selected Vulkan device can do at best, measured in the same run as a benchmark so every
// kernel or runner figure can be printed as a ratio to it (machines here are shared and noisy:
// absolute numbers drift, ratios measured together hold). Probes: streaming read GB/s (best of a
// few access patterns), FMA GFLOP/s and the fixed cost of one dispatch, with the bench-only
// probe_*.comp kernels.
#include <cstdint>
#include <string>

#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/kernel.h"

namespace vks::bench {

struct DeviceCeiling {
  double read_gbs = 0;          // best streaming read over the patterns below
  std::string read_pattern;     // which pattern gave it
  double run_read_gbs = 0;      // each invocation streams its own contiguous run (best run length)
  double coalesced_read_gbs = 0;  // neighbouring invocations read neighbouring words
  double texel_read_gbs = 0;    // the contiguous runs through a texel view (how the matrix kernels read)
  double fma_gflops = 0;        // register-only FMA chains
  double dispatch_us = 0;         // a near-empty dispatch of one workgroup and the barrier after it
  double dispatch_spread_us = 0;  // the same with 16 workgroups: the floor of a dispatch whose
                                  // groups the device spreads over its cores, whatever their work
};

struct CeilingOptions {
  uint64_t buffer_bytes = 128ull << 20;  // clipped to the device's storage-buffer range
  int passes = 8;                        // reads of the whole buffer per timed submit
  int trials = 3;                        // best of
};

DeviceCeiling measure_device_ceiling(const vk::Device& device, vk::KernelRegistry& kernels,
                                     const CeilingOptions& options = {});

// Floor of a step that records `dispatches` dispatches of several workgroups each, in ms.
inline double dispatch_floor_ms(const DeviceCeiling& c, uint32_t dispatches) {
  return c.dispatch_spread_us * dispatches / 1e3;
}

// "GB/s 3.42 = 0.84 of the device's streaming read" style ratio; 0 when the ceiling is unknown.
inline double ratio(double value, double ceiling) { return ceiling > 0 ? value / ceiling : 0.0; }

}  // namespace vks::bench
