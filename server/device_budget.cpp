#include "server/device_budget.h"

#include <cstdlib>
#include <vector>

#include "engine/vulkan/runner/backend_choice.h"

namespace vks::server {

std::optional<uint64_t> device_heap_budget(const vk::DeviceInfo* device, const RunnerOptions& options) {
  if (device == nullptr || device->uma || device->device_local_bytes == 0) return std::nullopt;
  if (choose_backend(device, options, 0).backend != Backend::kVulkan) return std::nullopt;
  return device->device_local_bytes / 10 * 9;
}

std::optional<uint64_t> probe_device_heap_budget(const RunnerOptions& requested) {
  RunnerOptions options = requested;
  if (const char* env = std::getenv("VKSTREAM_DEVICE"); options.device.empty() && env != nullptr) options.device = env;
  if (options.force_cpu) return std::nullopt;
  const std::vector<vk::DeviceInfo> devices = vk::list_devices();
  if (devices.empty()) return std::nullopt;
  try {
    return device_heap_budget(&devices[vk::select_device(devices, options.device)], options);
  } catch (const std::exception&) {
    return std::nullopt;  // a selector matching nothing: the load says so
  }
}

}  // namespace vks::server
