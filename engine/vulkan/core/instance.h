#pragma once
// Move-only owner of a VkInstance (+ debug messenger when validation is on).
#include <vulkan/vulkan.h>

#include <memory>
#include <vector>

namespace vks::vk {

class Instance {
 public:
  // validation: enable VK_LAYER_KHRONOS_validation (and log its messages with spdlog) if the layer
  // is installed; the default follows env VKSTREAM_VK_VALIDATION=1. Throws vks::Error(kDevice)
  // when no Vulkan 1.2 instance can be created.
  static Instance create();
  static Instance create(bool validation);
  // The process's one instance (per validation setting), created on first use and never destroyed
  // (instance.cpp says why).
  // Why not one per Device: the loader unloads a driver with the last instance, and NVIDIA's driver
  // cannot be loaded again in the same process once its static TLS block is spent (seen on an H100:
  // "libnvidia-tls.so: cannot allocate memory in static TLS block" after a test binary had created
  // and destroyed about twenty devices; every later device was "not found"). Thread-safe; throws as
  // create() does (a failure is not remembered, so a later call tries again).
  static std::shared_ptr<const Instance> shared();
  static std::shared_ptr<const Instance> shared(bool validation);
  // Drops the process's hold on the shared instances (each is destroyed with its last Device). For
  // a program's end, from main before it returns: Mesa's drivers write their on-disk shader cache
  // from a background thread of the lowest priority, and only the instance's destruction (the
  // driver's screen with it) waits for writes still queued; a process that ends holding its
  // instance drops them, and its next start compiles those kernels again.
  static void release_shared();

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
