#pragma once
// Which backend runs a model when the user did not say (docs/ARCHITECTURE.md, "Backend choice"):
//   1. --cpu: the CPU backend.
//   2. No Vulkan device: the CPU backend, unless the fallback is forbidden (then make_runner fails).
//   3. The user asked for Vulkan (--vulkan, --no-cpu-fallback, --device or VKSTREAM_DEVICE): Vulkan.
//   4. The selected device is a GPU (discrete, integrated, virtual or other): Vulkan.
//   5. It is a CPU-type Vulkan device (lavapipe): the CPU backend at every size. Both run on the
//      same cores, and since the CPU backend computes with integer kernels over the GGUF blocks
//      (engine/cpu/quant) it is the faster: vks_bench_backend_choice on lavapipe (Mesa 22.3, 2
//      cores, steps alternating in one process), TinyLlama-shape Q4_0 (582 MB of matrices), Vulkan
//      / CPU 0.46 at prefill and 0.45 at decode. (With the float reference before it, Vulkan had
//      decoded the files from 269 MB up 1.38-2.23x as fast, hence a size threshold then.)
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/runner_options.h"

namespace vks {

enum class Backend : uint8_t { kCpu, kVulkan };

struct BackendChoice {
  Backend backend = Backend::kVulkan;
  std::string reason;  // one sentence for the log
};

// The Vulkan devices a load sees and the one it selects, with the options as a load reads them.
struct DeviceSelection {
  RunnerOptions options;                // with VKSTREAM_DEVICE and --vulkan's "no fallback" applied
  std::vector<vk::DeviceInfo> devices;  // none under --cpu
  size_t selected = 0;                  // index into devices, when there are any
  const vk::DeviceInfo* device() const { return devices.empty() ? nullptr : &devices[selected]; }
};

// make_runner's device selection, shared with what asks ahead of a load where it would land: an
// empty options.device takes VKSTREAM_DEVICE, --vulkan forbids the CPU fallback, --cpu lists no
// device. Throws vks::Error(kNotFound) when options.device matches no device.
DeviceSelection select_runner_device(const RunnerOptions& requested);

// The rule above on `device`, the one the Vulkan runner would select (nullptr when there is none),
// for a model whose decode step streams `model_matrix_bytes` (step_matrix_bytes()).
BackendChoice choose_backend(const vk::DeviceInfo* device, const RunnerOptions& options, uint64_t model_matrix_bytes);

// The backend a plain start picks with `device` selected, and choose_backend's reason, in one line
// (`vkstream devices`).
std::string backend_rule_summary(const vk::DeviceInfo& device);

}  // namespace vks
