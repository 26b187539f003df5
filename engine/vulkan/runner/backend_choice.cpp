#include "engine/vulkan/runner/backend_choice.h"

#include <fmt/format.h>

namespace vks {

DeviceSelection select_runner_device(const RunnerOptions& requested) {
  DeviceSelection s;
  s.options = requested;
  // --vulkan promises Vulkan: no quiet fallback to the CPU when the device is missing or unusable.
  if (s.options.force_vulkan) s.options.allow_cpu_fallback = false;
  s.options.device = vk::device_selector(s.options.device);
  if (!s.options.force_cpu) s.devices = vk::list_devices();
  if (!s.devices.empty()) s.selected = vk::select_device(s.devices, s.options.device);
  return s;
}

BackendChoice choose_backend(const vk::DeviceInfo* device, const RunnerOptions& options, uint64_t model_matrix_bytes) {
  if (options.force_cpu) return {Backend::kCpu, "the CPU backend was asked for (--cpu)"};
  if (device == nullptr) return {Backend::kCpu, "no Vulkan device was found"};
  if (options.force_vulkan || !options.allow_cpu_fallback || !options.device.empty()) {
    return {Backend::kVulkan, fmt::format("Vulkan on {} was asked for (--vulkan, --no-cpu-fallback, --device or "
                                          "VKSTREAM_DEVICE)",
                                          device->name)};
  }
  if (device->type != VK_PHYSICAL_DEVICE_TYPE_CPU) {
    return {Backend::kVulkan, fmt::format("{} is a {} GPU", device->name, device->type_name)};
  }
  return {Backend::kCpu, fmt::format("{} is a CPU device, where the CPU backend's integer kernels run faster than "
                                     "Vulkan on the same cores (vks_bench_backend_choice; model matrices {:.0f} MB); "
                                     "--vulkan runs on it anyway",
                                     device->name, double(model_matrix_bytes) / 1e6)};
}

std::string backend_rule_summary(const vk::DeviceInfo& device) {
  const BackendChoice plain = choose_backend(&device, RunnerOptions{}, 0);
  return std::string(plain.backend == Backend::kCpu ? "the CPU backend: " : "Vulkan: ") + plain.reason;
}

}  // namespace vks
