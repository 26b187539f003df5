#pragma once
// Whether a start on lavapipe may skip its warm-up (issue 37). lavapipe compiles a pipeline at its
// first dispatch, from Mesa's disk cache when an earlier start compiled it; the warm-up's steps
// exist to pay that before READY. A stamp in Mesa's cache folder, named for the driver, the device
// and the exact pipelines the runner built (their SPIR-V included), records that a warm-up of that
// set ran to the end with that folder: a later start with the same name finds every variant there
// and skips the steps (on a 1B model, seconds of computing). A stale stamp cannot give wrong
// results, only a slow first request: the cache is Mesa's, keyed by Mesa, and an evicted or
// deleted entry is compiled again (deleting the folder deletes the stamp with it).
#include <cstdint>
#include <string>

#include "engine/vulkan/core/device_info.h"

namespace vks {

// The stamp's path for this device and pipeline set, or "" where none applies: not a CPU device (a
// GPU driver compiles at pipeline creation, where our VkPipelineCache serves), MESA_SHADER_CACHE_DIR
// unset (vkstreamd sets it, vk::place_driver_shader_cache) or MESA_SHADER_CACHE_DISABLE set.
std::string warm_stamp_path(const vk::DeviceInfo& device, uint64_t kernel_fingerprint);
bool warm_stamp_present(const std::string& path);
// Creates the stamp after a finished warm-up; failures are ignored (the next start warms up again).
void write_warm_stamp(const std::string& path);

}  // namespace vks
