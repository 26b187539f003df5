#pragma once
// Command recording: move-only Fence and CommandBuffer, the one barrier helper, copies, and the
// checked dispatch (binding count and push-constant size must match the kernel's layout).
#include <vulkan/vulkan.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <type_traits>
#include <vector>

#include "engine/vulkan/core/buffer.h"
#include "engine/vulkan/core/kernel.h"

namespace vks::vk {

class Fence {
 public:
  Fence() = default;
  ~Fence();
  Fence(Fence&& other) noexcept;
  Fence& operator=(Fence&& other) noexcept;
  Fence(const Fence&) = delete;
  Fence& operator=(const Fence&) = delete;

  VkFence handle() const { return fence_; }
  // Waits until signalled (throws vks::Error(kDevice) on device loss or after timeout_ns).
  void wait(uint64_t timeout_ns = UINT64_MAX) const;
  bool signalled() const;
  void reset();

 private:
  friend class Device;
  void destroy() noexcept;
  VkDevice device_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

// Where memory is produced or consumed, for CommandBuffer::barrier.
enum class Stage { kCompute, kTransfer, kHost };

// How a recording is submitted: once, or again and again (a replayed step, step_replay.h).
enum class Reuse { kOnce, kReplayed };

// Workgroup counts of one dispatch.
struct Groups {
  uint32_t x = 1, y = 1, z = 1;
};

constexpr uint64_t ceil_div(uint64_t n, uint64_t d) { return (n + d - 1) / d; }

// Workgroups every Vulkan device accepts in one grid dimension (maxComputeWorkGroupCount minimum).
inline constexpr uint32_t kGuaranteedGroupsPerDimension = 65535;

class CommandBuffer {
 public:
  CommandBuffer() = default;
  ~CommandBuffer();
  CommandBuffer(CommandBuffer&& other) noexcept;
  CommandBuffer& operator=(CommandBuffer&& other) noexcept;
  CommandBuffer(const CommandBuffer&) = delete;
  CommandBuffer& operator=(const CommandBuffer&) = delete;

  VkCommandBuffer handle() const { return cmd_; }

  // begin() resets the command buffer and its descriptor pool (the previous submission must have
  // completed: wait on its fence first). A kReplayed recording keeps its descriptor sets until the
  // next begin() and may be submitted any number of times, each after the last one completed.
  void begin(Reuse reuse = Reuse::kOnce);
  void end();

  // Global memory barrier: everything written at `src` before is visible to `dst` after.
  // (kCompute, kCompute) between dependent dispatches; (kCompute, kTransfer) before copying a
  // result; (kCompute, kHost) / (kTransfer, kHost) before reading mapped memory after the fence;
  // (kHost, kCompute) / (kTransfer, kCompute) for inputs written before the dispatches.
  void barrier(Stage src, Stage dst);

  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t size);
  void copy(VkBuffer src, uint64_t src_offset, VkBuffer dst, uint64_t dst_offset, uint64_t size);
  // Fills [offset, offset+size) with a 32-bit pattern (size a multiple of 4 or VK_WHOLE_SIZE).
  void fill(const Buffer& dst, uint64_t offset, uint64_t size, uint32_t value);

  // Checked dispatch. Throws vks::Error(kInternal) when bindings.size() != kernel.layout().bindings,
  // sizeof(Params) != kernel.layout().push_size, a view is misaligned or out of range, or a group
  // count is 0 or above maxComputeWorkGroupCount.
  template <class Params>
  void dispatch(const Kernel& kernel, std::initializer_list<BufferView> bindings, const Params& params,
                Groups groups) {
    static_assert(sizeof(Params) <= 128, "push constants are limited to 128 bytes");
    static_assert(std::is_trivially_copyable_v<Params>);
    dispatch_raw(kernel, std::span<const BufferView>(bindings.begin(), bindings.size()), &params,
                 sizeof(Params), groups);
  }
  template <class Params>
  void dispatch(const Kernel& kernel, std::span<const BufferView> bindings, const Params& params,
                Groups groups) {
    static_assert(sizeof(Params) <= 128, "push constants are limited to 128 bytes");
    static_assert(std::is_trivially_copyable_v<Params>);
    dispatch_raw(kernel, bindings, &params, sizeof(Params), groups);
  }
  // For kernels without push constants.
  void dispatch(const Kernel& kernel, std::initializer_list<BufferView> bindings, Groups groups) {
    dispatch_raw(kernel, std::span<const BufferView>(bindings.begin(), bindings.size()), nullptr, 0, groups);
  }
  void dispatch_raw(const Kernel& kernel, std::span<const BufferView> bindings, const void* push,
                    uint32_t push_size, Groups groups);

  // Number of dispatches recorded since begin() (for benchmarks and tests; kept after end()).
  uint32_t dispatch_count() const { return dispatches_; }

 private:
  friend class Device;
  void destroy() noexcept;
  VkDescriptorPool grow_pool();
  VkDevice device_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  // Descriptor pools of this command buffer; sets are allocated per dispatch and reset in begin().
  std::vector<VkDescriptorPool> descriptor_pools_;
  size_t current_pool_ = 0;
  uint64_t offset_alignment_ = 16;
  uint64_t max_range_ = 0;
  uint32_t max_groups_[3] = {kGuaranteedGroupsPerDimension, kGuaranteedGroupsPerDimension,
                             kGuaranteedGroupsPerDimension};
  uint32_t dispatches_ = 0;
};

// Convenience: groups covering `threads` invocations along each axis with the kernel's local size
// (ceil-div), e.g. groups_for(k, n_rows) for a kernel with one invocation per row.
Groups groups_for(const Kernel& kernel, uint64_t threads_x, uint64_t threads_y = 1, uint64_t threads_z = 1);

}  // namespace vks::vk
