#pragma once
// The chosen physical device, its logical device and compute queue, a command pool, the on-disk
// pipeline cache, and buffer allocation / synchronous transfers. Move-only; objects created from a
// Device (Buffer, CommandBuffer, Fence, Kernel) must be destroyed before it.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>

#include "engine/vulkan/core/buffer.h"
#include "engine/vulkan/core/command.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/core/instance.h"

namespace vks::vk {

struct DeviceOptions {
  // "" = env VKSTREAM_DEVICE if set, else automatic. Digits = device index, else a name substring.
  std::string selector;
  // Validation layer: -1 = env VKSTREAM_VK_VALIDATION=1, 0 = off, 1 = on.
  int validation = -1;
  // Load/save the pipeline cache at $XDG_CACHE_HOME (or ~/.cache)/vkstream/pipeline_cache.bin.
  bool disk_pipeline_cache = true;
  // Half conversions in the shaders: -1 = env VKSTREAM_HALVES_BY_INTEGER_STEPS (0 or 1) if set, else
  // the device's rule (DeviceInfo::halves_by_integer_steps); 0 = unpackHalf2x16, 1 = integer steps
  // (tests run both on one device; a user can take the integer steps on a driver that gets it wrong).
  int halves_by_integer_steps = -1;
};

class Device {
 public:
  // Throws vks::Error(kNotFound) when no device exists or none matches the selector, kDevice
  // when creation fails.
  static Device create(const DeviceOptions& options = {});

  Device() = default;
  ~Device();
  Device(Device&& other) noexcept;
  Device& operator=(Device&& other) noexcept;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkInstance instance() const { return instance_->handle(); }
  bool validation_enabled() const { return instance_->validation_enabled(); }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  VkPipelineCache pipeline_cache() const { return pipeline_cache_; }
  // Largest buffer a single storage binding can cover (and one allocation can hold).
  uint64_t max_binding_bytes() const;
  // Largest buffer that is also read whole through its texel view (Buffer::texel_view): weight
  // parts and the activations the matrix kernels read as x.
  uint64_t max_texel_binding_bytes() const;

  // Buffers. size > 0. kStorage on a UMA device is host-visible and mapped.
  Buffer create_buffer(uint64_t size, BufferKind kind = BufferKind::kStorage) const;
  // rows x row_bytes split in parts of at most max_part_bytes (0 = max_binding_bytes()); every part
  // size is rounded so parts start on whole rows. Throws kInvalidArgument if one row is larger.
  SplitBuffer create_split_buffer(uint64_t rows, uint64_t row_bytes, uint64_t max_part_bytes = 0) const;

  // Synchronous transfers (memcpy when the buffer is mapped, else through a staging buffer and a
  // submit-and-wait). Must not race with a submission using the same range.
  void upload(const Buffer& dst, uint64_t dst_offset, const void* data, uint64_t size) const;
  void download(const Buffer& src, uint64_t src_offset, void* data, uint64_t size) const;
  // Rows [first_row, first_row + n_rows) of a split tensor from host memory (n_rows*row_bytes bytes).
  void upload_rows(const SplitBuffer& dst, uint64_t first_row, const void* data, uint64_t n_rows) const;
  // Host-side cache maintenance for non-coherent mapped memory (no-ops when coherent).
  void flush(const Buffer& b, uint64_t offset = 0, uint64_t size = VK_WHOLE_SIZE) const;
  void invalidate(const Buffer& b, uint64_t offset = 0, uint64_t size = VK_WHOLE_SIZE) const;

  CommandBuffer create_command_buffer() const;
  Fence create_fence(bool signalled = false) const;
  // Submits one recorded (ended) command buffer; the fence is signalled when it completes.
  void submit(const CommandBuffer& cmd, const Fence& fence) const;
  void submit_and_wait(const CommandBuffer& cmd) const;
  void wait_idle() const;

  // Writes the pipeline cache to disk if disk caching is on (failures are logged and ignored).
  void save_pipeline_cache() const;

 private:
  void destroy() noexcept;
  std::shared_ptr<const Instance> instance_;  // the process's one instance (Instance::shared)
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  bool disk_cache_ = false;
  DeviceInfo info_;
  VkPhysicalDeviceMemoryProperties memory_props_{};
};

// $XDG_CACHE_HOME/vkstream/pipeline_cache.bin, or ~/.cache/vkstream/..., "" if neither is known.
std::string pipeline_cache_path();

// Points Mesa's on-disk shader cache (MESA_SHADER_CACHE_DIR, unless the user set it) at
// <our cache folder>/mesa_shader_cache, beside pipeline_cache.bin. Mesa's own default
// (~/.cache/mesa_shader_cache, or $XDG_CACHE_HOME/mesa_shader_cache) is read-only under the
// units' ProtectHome=/ProtectSystem=, so every activation recompiled every kernel (15-22 s on
// lavapipe); the units' CacheDirectory=vkstream is writable. Call once at start-up, before any
// thread exists and before the first Vulkan call (it calls setenv). Returns the folder used, or ""
// when the variable was already set or no cache folder is known.
std::string place_driver_shader_cache();

}  // namespace vks::vk
