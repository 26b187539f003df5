#pragma once
// Where a daemon's models will live, learned before the first load: on a discrete GPU the weights
// and KV pools go to its own device-local heap, which is then the budget that fills first; on the
// CPU backend or a GPU sharing the host's memory (integrated, lavapipe) they take host memory, which
// the host budget already covers.
#include <cstdint>
#include <optional>

#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/runner_options.h"

namespace vks::server {

// The bytes the loaded models may take in `device`'s own heap when a plain load (`options`) would
// put them there: nine tenths of its device-local heaps (the rest is the driver's, the pipelines'
// and each step's activations). nullopt when the models would live in host memory.
std::optional<uint64_t> device_heap_budget(const vk::DeviceInfo* device, const RunnerOptions& options);

// The same for the device a load would select: enumerates the Vulkan devices with a temporary
// instance (up to about a second; run it off the loop).
std::optional<uint64_t> probe_device_heap_budget(const RunnerOptions& options);

}  // namespace vks::server
