#include "engine/vulkan/runner/backend_choice.h"

#include <fmt/format.h>

namespace vks {

BackendChoice choose_backend(const vk::DeviceInfo* device, const RunnerOptions& options, uint64_t model_matrix_bytes) {
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
  const double mb = double(model_matrix_bytes) / 1e6, limit_mb = double(kVulkanOnCpuDeviceMinBytes) / 1e6;
  if (model_matrix_bytes >= kVulkanOnCpuDeviceMinBytes) {
    return {Backend::kVulkan, fmt::format("{} is a CPU device and the model's weight matrices ({:.0f} MB) reach {:.0f} "
                                          "MB, from where Vulkan decodes faster there than the CPU reference "
                                          "(vks_bench_backend_choice); --cpu runs the CPU reference anyway",
                                          device->name, mb, limit_mb)};
  }
  return {Backend::kCpu, fmt::format("{} is a CPU device and the model's weight matrices ({:.1f} MB) are under {:.0f} "
                                     "MB, where the CPU reference mostly decodes faster there "
                                     "(vks_bench_backend_choice); --vulkan runs on it anyway",
                                     device->name, mb, limit_mb)};
}

std::string backend_rule_summary(const vk::DeviceInfo& device) {
  if (device.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    return fmt::format("by model size: the CPU reference for models under {:.0f} MB of weight matrices, Vulkan from "
                       "there ({} is a CPU device, where both share the cores; --cpu or --vulkan decides)",
                       double(kVulkanOnCpuDeviceMinBytes) / 1e6, device.name);
  }
  const BackendChoice plain = choose_backend(&device, RunnerOptions{}, 0);
  return std::string(plain.backend == Backend::kCpu ? "the CPU reference: " : "Vulkan: ") + plain.reason;
}

}  // namespace vks
