#pragma once
// Which backend runs a model when the user did not say (docs/ARCHITECTURE.md, "Backend choice"):
//   1. --cpu: the CPU reference.
//   2. No Vulkan device: the CPU reference, unless the fallback is forbidden (then make_runner fails).
//   3. The user asked for Vulkan (--vulkan, --no-cpu-fallback, --device or VKSTREAM_DEVICE): Vulkan.
//   4. The selected device is a GPU (discrete, integrated, virtual or other): Vulkan.
//   5. It is a CPU-type Vulkan device (lavapipe): the CPU reference. Both backends then run on the
//      same cores (vks_bench_backend_choice on lavapipe, Mesa 22.3, 2 cores; Vulkan / CPU tokens/s,
//      steps alternating in one process, 8 files from stories260K to a 3B llama shape):
//        prefill 0.14-0.76: the CPU reference was faster on every file;
//        decode 0.09 (stories260K) to 0.99 (Qwen2.5-0.5B Q4_0), 0.68-0.87 for Q4_K_M at every size;
//        Vulkan decoded faster only Q4_0 at 582 MB and 1.8 GB (1.18, 1.27), and for TinyLlama Q4_0
//        its slower prefill (0.66) made a request of 200 prompt and 200 output tokens take as long
//        as on the CPU (93.3 s against 94.6 s, from the measured rates).
#include <cstdint>
#include <string>

#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/runner_options.h"

namespace vks {

enum class Backend : uint8_t { kCpu, kVulkan };

struct BackendChoice {
  Backend backend = Backend::kVulkan;
  std::string reason;  // one sentence for the log
};

// The rule above on `device`, the one the Vulkan runner would select (nullptr when there is none).
BackendChoice choose_backend(const vk::DeviceInfo* device, const RunnerOptions& options);

// The backend a plain start picks with `device` selected, and choose_backend's reason, in one line
// (`vkstream devices`).
std::string backend_rule_summary(const vk::DeviceInfo& device);

}  // namespace vks
