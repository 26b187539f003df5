#include "engine/vulkan/core/command.h"

#include <array>
#include <string>
#include <utility>

#include "engine/common/error.h"
#include "engine/vulkan/core/vk_error.h"

namespace vks::vk {

// ---- Fence ----

Fence::~Fence() { destroy(); }

Fence::Fence(Fence&& o) noexcept
    : device_(std::exchange(o.device_, VK_NULL_HANDLE)), fence_(std::exchange(o.fence_, VK_NULL_HANDLE)) {}

Fence& Fence::operator=(Fence&& o) noexcept {
  if (this != &o) {
    destroy();
    device_ = std::exchange(o.device_, VK_NULL_HANDLE);
    fence_ = std::exchange(o.fence_, VK_NULL_HANDLE);
  }
  return *this;
}

void Fence::destroy() noexcept {
  if (fence_ != VK_NULL_HANDLE) vkDestroyFence(device_, fence_, nullptr);
  fence_ = VK_NULL_HANDLE;
  device_ = VK_NULL_HANDLE;
}

void Fence::wait(uint64_t timeout_ns) const {
  const VkResult r = vkWaitForFences(device_, 1, &fence_, VK_TRUE, timeout_ns);
  if (r == VK_TIMEOUT) throw Error(ErrorCode::kDevice, "vkWaitForFences: timed out");
  check(r, "vkWaitForFences");
}

bool Fence::signalled() const { return vkGetFenceStatus(device_, fence_) == VK_SUCCESS; }

void Fence::reset() { check(vkResetFences(device_, 1, &fence_), "vkResetFences"); }

// ---- CommandBuffer ----

namespace {

constexpr uint32_t kSetsPerPool = 512;
constexpr uint32_t kDescriptorsPerPool = 512 * 8;

struct StageMasks {
  VkPipelineStageFlags stage;
  VkAccessFlags access;
};

StageMasks masks(Stage s, bool is_src) {
  switch (s) {
    case Stage::kCompute:
      return {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              is_src ? VkAccessFlags(VK_ACCESS_SHADER_WRITE_BIT)
                     : VkAccessFlags(VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT)};
    case Stage::kTransfer:
      return {VK_PIPELINE_STAGE_TRANSFER_BIT,
              is_src ? VkAccessFlags(VK_ACCESS_TRANSFER_WRITE_BIT)
                     : VkAccessFlags(VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT)};
    case Stage::kHost:
      return {VK_PIPELINE_STAGE_HOST_BIT,
              is_src ? VkAccessFlags(VK_ACCESS_HOST_WRITE_BIT)
                     : VkAccessFlags(VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT)};
  }
  return {VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
}

}  // namespace

CommandBuffer::~CommandBuffer() { destroy(); }

CommandBuffer::CommandBuffer(CommandBuffer&& o) noexcept
    : device_(std::exchange(o.device_, VK_NULL_HANDLE)),
      pool_(std::exchange(o.pool_, VK_NULL_HANDLE)),
      cmd_(std::exchange(o.cmd_, VK_NULL_HANDLE)),
      descriptor_pools_(std::move(o.descriptor_pools_)),
      current_pool_(std::exchange(o.current_pool_, 0)),
      offset_alignment_(o.offset_alignment_),
      max_range_(o.max_range_),
      max_groups_{o.max_groups_[0], o.max_groups_[1], o.max_groups_[2]},
      dispatches_(o.dispatches_) {
  o.descriptor_pools_.clear();
}

CommandBuffer& CommandBuffer::operator=(CommandBuffer&& o) noexcept {
  if (this != &o) {
    destroy();
    device_ = std::exchange(o.device_, VK_NULL_HANDLE);
    pool_ = std::exchange(o.pool_, VK_NULL_HANDLE);
    cmd_ = std::exchange(o.cmd_, VK_NULL_HANDLE);
    descriptor_pools_ = std::move(o.descriptor_pools_);
    o.descriptor_pools_.clear();
    current_pool_ = std::exchange(o.current_pool_, 0);
    offset_alignment_ = o.offset_alignment_;
    max_range_ = o.max_range_;
    for (int i = 0; i < 3; ++i) max_groups_[i] = o.max_groups_[i];
    dispatches_ = o.dispatches_;
  }
  return *this;
}

void CommandBuffer::destroy() noexcept {
  if (device_ == VK_NULL_HANDLE) return;
  for (VkDescriptorPool p : descriptor_pools_) vkDestroyDescriptorPool(device_, p, nullptr);
  descriptor_pools_.clear();
  if (cmd_ != VK_NULL_HANDLE) vkFreeCommandBuffers(device_, pool_, 1, &cmd_);
  cmd_ = VK_NULL_HANDLE;
  device_ = VK_NULL_HANDLE;
}

void CommandBuffer::begin(Reuse reuse) {
  check(vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer");
  for (VkDescriptorPool p : descriptor_pools_) check(vkResetDescriptorPool(device_, p, 0), "vkResetDescriptorPool");
  current_pool_ = 0;
  dispatches_ = 0;
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = reuse == Reuse::kOnce ? VkCommandBufferUsageFlags{VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT} : 0;
  check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
}

void CommandBuffer::end() { check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer"); }

void CommandBuffer::barrier(Stage src, Stage dst) {
  const StageMasks s = masks(src, true);
  const StageMasks d = masks(dst, false);
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = s.access;
  mb.dstAccessMask = d.access;
  vkCmdPipelineBarrier(cmd_, s.stage, d.stage, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void CommandBuffer::copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset,
                         uint64_t size) {
  if (src_offset > src.size() || size > src.size() - src_offset || dst_offset > dst.size() ||
      size > dst.size() - dst_offset) {
    throw Error(ErrorCode::kInternal, "copy of " + std::to_string(size) + " bytes out of buffer range");
  }
  copy(src.handle(), src_offset, dst.handle(), dst_offset, size);
}

void CommandBuffer::copy(VkBuffer src, uint64_t src_offset, VkBuffer dst, uint64_t dst_offset, uint64_t size) {
  VkBufferCopy region{src_offset, dst_offset, size};
  vkCmdCopyBuffer(cmd_, src, dst, 1, &region);
}

void CommandBuffer::fill(const Buffer& dst, uint64_t offset, uint64_t size, uint32_t value) {
  vkCmdFillBuffer(cmd_, dst.handle(), offset, size, value);
}

VkDescriptorPool CommandBuffer::grow_pool() {
  const VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerPool},
                                         {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, kDescriptorsPerPool}};
  VkDescriptorPoolCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  ci.maxSets = kSetsPerPool;
  ci.poolSizeCount = 2;
  ci.pPoolSizes = sizes;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  check(vkCreateDescriptorPool(device_, &ci, nullptr, &pool), "vkCreateDescriptorPool");
  descriptor_pools_.push_back(pool);
  return pool;
}

void CommandBuffer::dispatch_raw(const Kernel& kernel, std::span<const BufferView> bindings, const void* push,
                                 uint32_t push_size, Groups groups) {
  const KernelLayout& layout = kernel.layout();
  const std::string& name = kernel.name();
  if (bindings.size() != layout.bindings) {
    throw Error(ErrorCode::kInternal, "dispatch " + name + ": " + std::to_string(bindings.size()) +
                                          " bindings given, the shader declares " + std::to_string(layout.bindings));
  }
  if (push_size != layout.push_size) {
    throw Error(ErrorCode::kInternal, "dispatch " + name + ": push constants of " + std::to_string(push_size) +
                                          " bytes given, the shader declares " + std::to_string(layout.push_size));
  }
  const uint32_t counts[3] = {groups.x, groups.y, groups.z};
  for (int i = 0; i < 3; ++i) {
    if (counts[i] == 0 || counts[i] > max_groups_[i]) {
      throw Error(ErrorCode::kInternal, "dispatch " + name + ": workgroup count " + std::to_string(counts[i]) +
                                            " on axis " + std::to_string(i) + " is 0 or above the device limit " +
                                            std::to_string(max_groups_[i]));
    }
  }
  // On the stack: a decode step records dozens of dispatches, none of which should allocate.
  std::array<VkDescriptorBufferInfo, kMaxKernelBindings> infos;
  std::array<VkWriteDescriptorSet, kMaxKernelBindings> writes;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const BufferView& v = bindings[i];
    if (v.buffer == VK_NULL_HANDLE) {
      throw Error(ErrorCode::kInternal, "dispatch " + name + ": binding " + std::to_string(i) + " is a null buffer");
    }
    writes[i] = VkWriteDescriptorSet{};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    if ((layout.texel_bindings >> i) & 1u) {
      // The texel view covers the whole buffer; the kernel adds the offset itself.
      if (v.texel == VK_NULL_HANDLE) {
        throw Error(ErrorCode::kInternal, "dispatch " + name + ": binding " + std::to_string(i) +
                                              " is a texel buffer and the buffer has no texel view");
      }
      if (v.offset % 16 != 0) {
        throw Error(ErrorCode::kInternal, "dispatch " + name + ": binding " + std::to_string(i) +
                                              " is a texel buffer and its offset is not a whole texel");
      }
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
      writes[i].pTexelBufferView = &v.texel;
      continue;
    }
    if (v.offset % offset_alignment_ != 0) {
      throw Error(ErrorCode::kInternal, "dispatch " + name + ": binding " + std::to_string(i) + " offset " +
                                            std::to_string(v.offset) + " is not a multiple of " +
                                            std::to_string(offset_alignment_));
    }
    if (v.size != VK_WHOLE_SIZE && (v.size == 0 || v.size > max_range_)) {
      throw Error(ErrorCode::kInternal, "dispatch " + name + ": binding " + std::to_string(i) + " range " +
                                            std::to_string(v.size) + " is 0 or above maxStorageBufferRange");
    }
    infos[i] = VkDescriptorBufferInfo{v.buffer, v.offset, v.size};
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }

  VkDescriptorSet set = VK_NULL_HANDLE;
  if (layout.bindings > 0) {
    VkDescriptorSetLayout set_layout = kernel.set_layout();
    for (;;) {
      if (current_pool_ == descriptor_pools_.size()) grow_pool();
      VkDescriptorSetAllocateInfo ai{};
      ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
      ai.descriptorPool = descriptor_pools_[current_pool_];
      ai.descriptorSetCount = 1;
      ai.pSetLayouts = &set_layout;
      const VkResult r = vkAllocateDescriptorSets(device_, &ai, &set);
      if (r == VK_SUCCESS) break;
      if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) check(r, "vkAllocateDescriptorSets");
      ++current_pool_;
    }
    for (size_t i = 0; i < bindings.size(); ++i) writes[i].dstSet = set;
    vkUpdateDescriptorSets(device_, static_cast<uint32_t>(bindings.size()), writes.data(), 0, nullptr);
  }
  vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline());
  if (set != VK_NULL_HANDLE) {
    vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline_layout(), 0, 1, &set, 0, nullptr);
  }
  if (push_size > 0) {
    vkCmdPushConstants(cmd_, kernel.pipeline_layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
  }
  vkCmdDispatch(cmd_, groups.x, groups.y, groups.z);
  ++dispatches_;
}

Groups groups_for(const Kernel& kernel, uint64_t threads_x, uint64_t threads_y, uint64_t threads_z) {
  const KernelLayout& l = kernel.layout();
  return Groups{static_cast<uint32_t>(ceil_div(threads_x, l.local_size[0])),
                static_cast<uint32_t>(ceil_div(threads_y, l.local_size[1])),
                static_cast<uint32_t>(ceil_div(threads_z, l.local_size[2]))};
}

}  // namespace vks::vk
