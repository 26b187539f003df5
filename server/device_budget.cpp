#include "server/device_budget.h"

#include <exception>

#include "engine/vulkan/runner/backend_choice.h"

namespace vks::server {

std::optional<uint64_t> device_heap_budget(const vk::DeviceInfo* device, const RunnerOptions& options) {
  if (device == nullptr || device->uma || device->device_local_bytes == 0) return std::nullopt;
  if (choose_backend(device, options, 0).backend != Backend::kVulkan) return std::nullopt;
  return device->device_local_bytes / 10 * 9;
}

std::optional<uint64_t> probe_device_heap_budget(const RunnerOptions& requested) {
  try {
    const DeviceSelection selection = select_runner_device(requested);
    return device_heap_budget(selection.device(), selection.options);
  } catch (const std::exception&) {
    return std::nullopt;  // a selector matching nothing: the load says so
  }
}

}  // namespace vks::server
