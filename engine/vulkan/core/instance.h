#pragma once
// Move-only owner of a VkInstance (+ debug messenger when validation is on).
#include <vulkan/vulkan.h>

#include <vector>

namespace vks::vk {

class Instance {
 public:
  // validation: enable VK_LAYER_KHRONOS_validation (and log its messages with spdlog) if the layer
  // is installed; the default follows env VKSTREAM_VK_VALIDATION=1. Throws vks::Error(kDevice)
  // when no Vulkan 1.2 instance can be created.
  static Instance create();
  static Instance create(bool validation);

  Instance() = default;
  ~Instance();
  Instance(Instance&& other) noexcept;
  Instance& operator=(Instance&& other) noexcept;
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }
  std::vector<VkPhysicalDevice> physical_devices() const;

 private:
  void reset() noexcept;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
};

}  // namespace vks::vk
