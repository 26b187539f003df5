#include "engine/vulkan/runner/backend_choice.h"

#include <fmt/format.h>

namespace vks {

BackendChoice choose_backend(const vk::DeviceInfo* device, const RunnerOptions& options) {
  if (options.force_cpu) return {Backend::kCpu, "the CPU reference was asked for (--cpu)"};
  if (device == nullptr) return {Backend::kCpu, "no Vulkan device was found"};
  if (options.force_vulkan || !options.allow_cpu_fallback || !options.device.empty()) {
    return {Backend::kVulkan, fmt::format("Vulkan on {} was asked for (--vulkan, --no-cpu-fallback, --device or "
                                          "VKSTREAM_DEVICE)",
                                          device->name)};
  }
  if (device->type != VK_PHYSICAL_DEVICE_TYPE_CPU) {
    return {Backend::kVulkan, fmt::format("{} is a {} GPU", device->name, device->type_name)};
  }
  return {Backend::kCpu, fmt::format("{} is a CPU device, where the CPU reference prefills faster and decodes "
                                     "about as fast (vks_bench_backend_choice); --vulkan runs on it anyway",
                                     device->name)};
}

std::string backend_rule_summary(const vk::DeviceInfo& device) {
  const BackendChoice plain = choose_backend(&device, RunnerOptions{});
  return std::string(plain.backend == Backend::kCpu ? "the CPU reference: " : "Vulkan: ") + plain.reason;
}

}  // namespace vks
