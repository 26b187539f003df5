#pragma once
// Which backend runs a model when the user did not say (docs/ARCHITECTURE.md, "Backend choice"):
//   1. --cpu: the CPU reference.
//   2. No Vulkan device: the CPU reference, unless the fallback is forbidden (then make_runner fails).
//   3. The user asked for Vulkan (--vulkan, --no-cpu-fallback, --device or VKSTREAM_DEVICE): Vulkan.
//   4. The selected device is a GPU (discrete, integrated, virtual or other): Vulkan.
//   5. It is a CPU-type Vulkan device (lavapipe): Vulkan for models of at least
//      kVulkanOnCpuDeviceMinBytes of weight matrices, the CPU reference below. Both backends then
//      run on the same cores. vks_bench_backend_choice on lavapipe (Mesa 22.3, 2 cores), Vulkan / CPU
//      tokens/s with steps alternating in one process, 14 files:
//        from 269 MB (SmolLM2 F16, Qwen2.5-0.5B Q4_0 and Q4_K_M, TinyLlama Q4_0 and Q4_K_M) Vulkan
//        decoded 1.38-2.23x as fast and prefilled at 0.72-1.11x;
//        below, the CPU reference decoded faster on 7 of 9 files (Vulkan 0.12-0.87: F32 files,
//        stories260K, SmolLM2 Q8_0 and Q4_K_M); Vulkan won two small Q4_0 files (1.44, 1.53).
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

inline constexpr uint64_t kVulkanOnCpuDeviceMinBytes = 200'000'000;

// The rule above on `device`, the one the Vulkan runner would select (nullptr when there is none),
// for a model whose decode step streams `model_matrix_bytes` (step_matrix_bytes()).
BackendChoice choose_backend(const vk::DeviceInfo* device, const RunnerOptions& options, uint64_t model_matrix_bytes);

// The backend a plain start picks with `device` selected, and choose_backend's reason, in one line
// (`vkstream devices`).
std::string backend_rule_summary(const vk::DeviceInfo& device);

}  // namespace vks
