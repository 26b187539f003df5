#pragma once
// Device buffers: move-only Buffer (VkBuffer + its own VkDeviceMemory), views for binding, and
// SplitBuffer for tensors bigger than one storage-buffer binding may cover.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

namespace vks::vk {

enum class BufferKind {
  kStorage,   // device-local storage buffer (also host-visible + mapped on UMA devices like lavapipe)
  kStaging,   // host-visible coherent, transfer source (uploads)
  kReadback,  // host-visible (cached if possible), transfer destination (downloads)
};

// A range of a buffer to bind. As a storage buffer: offset must be a multiple of the device's
// minStorageBufferOffsetAlignment (checked at dispatch); size VK_WHOLE_SIZE = to the end. As a
// uniform texel buffer the descriptor is the buffer's texel view, which covers the whole buffer
// from 0: the kernel takes the offset in its parameters (in 16-byte texels, see texel_offset()).
struct BufferView {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0;
  uint64_t size = VK_WHOLE_SIZE;
  VkBufferView texel = VK_NULL_HANDLE;  // the buffer's uvec4 texel view; null if it has none

  // offset in texels; offset % 16 must be 0 (a dispatch refuses a texel binding otherwise).
  uint32_t texel_offset() const { return static_cast<uint32_t>(offset / 16); }
};

class Buffer {
 public:
  Buffer() = default;
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  uint64_t size() const { return size_; }
  BufferKind kind() const { return kind_; }
  bool valid() const { return buffer_ != VK_NULL_HANDLE; }
  // Persistently mapped pointer when the memory is host-visible, else nullptr.
  void* mapped() const { return mapped_; }
  bool host_visible() const { return mapped_ != nullptr; }
  // Whether host writes/reads need flush/invalidate (non-coherent memory); Device handles it.
  bool coherent() const { return coherent_; }
  VkDeviceMemory memory() const { return memory_; }

  BufferView view() const { return BufferView{buffer_, 0, size_, texel_view_}; }
  BufferView view(uint64_t offset, uint64_t size) const { return BufferView{buffer_, offset, size, texel_view_}; }
  // The whole buffer as R32G32B32A32_UINT texels (storage buffers up to the device's
  // maxTexelBufferElements texels; null otherwise).
  VkBufferView texel_view() const { return texel_view_; }

 private:
  friend class Device;
  void reset() noexcept;
  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkBufferView texel_view_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  uint64_t size_ = 0;
  BufferKind kind_ = BufferKind::kStorage;
  bool coherent_ = true;
};

// A [rows x row_bytes] tensor stored as consecutive row ranges, each in its own Buffer of at most
// the part limit (min(maxStorageBufferRange, maxMemoryAllocationSize) by default), so that every
// part can be bound whole. Part i holds rows [first_row(i), first_row(i) + part_rows(i)).
struct SplitBuffer {
  uint64_t rows = 0;
  uint64_t row_bytes = 0;
  uint64_t rows_per_part = 0;       // every part but the last holds exactly this many rows
  std::vector<Buffer> parts;

  size_t part_count() const { return parts.size(); }
  uint64_t first_row(size_t part) const { return part * rows_per_part; }
  uint64_t part_rows(size_t part) const;
  size_t part_of_row(uint64_t row) const { return static_cast<size_t>(row / rows_per_part); }
};

}  // namespace vks::vk
