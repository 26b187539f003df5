#include "engine/vulkan/core/buffer.h"

#include <algorithm>
#include <utility>

namespace vks::vk {

Buffer::~Buffer() { reset(); }

Buffer::Buffer(Buffer&& other) noexcept
    : device_(std::exchange(other.device_, VK_NULL_HANDLE)),
      buffer_(std::exchange(other.buffer_, VK_NULL_HANDLE)),
      memory_(std::exchange(other.memory_, VK_NULL_HANDLE)),
      texel_view_(std::exchange(other.texel_view_, VK_NULL_HANDLE)),
      mapped_(std::exchange(other.mapped_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      kind_(other.kind_),
      coherent_(other.coherent_) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    device_ = std::exchange(other.device_, VK_NULL_HANDLE);
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
    texel_view_ = std::exchange(other.texel_view_, VK_NULL_HANDLE);
    mapped_ = std::exchange(other.mapped_, nullptr);
    size_ = std::exchange(other.size_, 0);
    kind_ = other.kind_;
    coherent_ = other.coherent_;
  }
  return *this;
}

void Buffer::reset() noexcept {
  if (device_ == VK_NULL_HANDLE) return;
  if (mapped_ != nullptr) vkUnmapMemory(device_, memory_);
  if (texel_view_ != VK_NULL_HANDLE) vkDestroyBufferView(device_, texel_view_, nullptr);
  if (buffer_ != VK_NULL_HANDLE) vkDestroyBuffer(device_, buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) vkFreeMemory(device_, memory_, nullptr);
  device_ = VK_NULL_HANDLE;
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  texel_view_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
  size_ = 0;
}

uint64_t SplitBuffer::part_rows(size_t part) const {
  const uint64_t first = first_row(part);
  return first >= rows ? 0 : std::min(rows_per_part, rows - first);
}

}  // namespace vks::vk
