#include "engine/vulkan/core/device.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/common/error.h"
#include "engine/vulkan/core/texel_sizing.h"
#include "engine/vulkan/core/vk_error.h"

namespace vks::vk {
namespace {

constexpr uint64_t kStagingChunk = 64ull << 20;

uint32_t find_memory_type(const VkPhysicalDeviceMemoryProperties& props, uint32_t type_bits,
                          VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) {
  uint32_t fallback = UINT32_MAX;
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags f = props.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    if ((f & preferred) == preferred) return i;
    if (fallback == UINT32_MAX) fallback = i;
  }
  return fallback;
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The cache header (VkPipelineCacheHeaderVersionOne) must name this exact device, else the blob is
// dropped rather than handed to a driver that might not validate it.
bool cache_matches(const std::vector<char>& blob, const VkPhysicalDeviceProperties& p) {
  if (blob.size() < 16 + VK_UUID_SIZE) return false;
  uint32_t words[4];
  std::memcpy(words, blob.data(), sizeof(words));
  return words[0] >= 16 + VK_UUID_SIZE && words[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         words[2] == p.vendorID && words[3] == p.deviceID &&
         std::memcmp(blob.data() + 16, p.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

}  // namespace

std::string pipeline_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/vkstream/pipeline_cache.bin";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/vkstream/pipeline_cache.bin";
  return "";
}

std::string place_driver_shader_cache() {
  const char* set = std::getenv("MESA_SHADER_CACHE_DIR");
  if (set != nullptr && set[0] != '\0') return "";  // the user's choice (empty counts as unset)
  const std::string pipeline_cache = pipeline_cache_path();
  if (pipeline_cache.empty()) return "";
  const std::string dir = pipeline_cache.substr(0, pipeline_cache.rfind('/')) + "/mesa_shader_cache";
  std::error_code ec;  // Mesa creates only the last folder level itself
  std::filesystem::create_directories(dir, ec);
  if (ec) return "";
  setenv("MESA_SHADER_CACHE_DIR", dir.c_str(), 1);
  return dir;
}

Device Device::create(const DeviceOptions& options) {
  Device d;
  d.instance_ = options.validation < 0 ? Instance::shared() : Instance::shared(options.validation == 1);
  const std::vector<VkPhysicalDevice> pds = d.instance_->physical_devices();
  std::vector<DeviceInfo> infos;
  for (uint32_t i = 0; i < pds.size(); ++i) infos.push_back(query_device_info(pds[i], i));
  const size_t chosen = select_device(infos, device_selector(options.selector));
  d.physical_ = pds[chosen];
  d.info_ = infos[chosen];
  int halves = options.halves_by_integer_steps;
  if (halves < 0) {
    const char* env = std::getenv("VKSTREAM_HALVES_BY_INTEGER_STEPS");
    const std::string_view value = env == nullptr ? "" : env;
    if (value == "0" || value == "1") {
      halves = value == "1" ? 1 : 0;
    } else if (!value.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "VKSTREAM_HALVES_BY_INTEGER_STEPS is '" + std::string(value) + "': 1 or 0, or unset for the device's rule");
    }
  }
  if (halves >= 0) d.info_.halves_by_integer_steps = halves == 1;
  vkGetPhysicalDeviceMemoryProperties(d.physical_, &d.memory_props_);

  uint32_t n_families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d.physical_, &n_families, nullptr);
  std::vector<VkQueueFamilyProperties> families(n_families);
  vkGetPhysicalDeviceQueueFamilyProperties(d.physical_, &n_families, families.data());
  // Prefer a compute-only family (async compute on GPUs), else any family with compute.
  uint32_t family = UINT32_MAX;
  for (uint32_t i = 0; i < n_families; ++i) {
    const VkQueueFlags f = families[i].queueFlags;
    if ((f & VK_QUEUE_COMPUTE_BIT) && !(f & VK_QUEUE_GRAPHICS_BIT)) { family = i; break; }
  }
  for (uint32_t i = 0; i < n_families && family == UINT32_MAX; ++i) {
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = i;
  }
  if (family == UINT32_MAX) throw Error(ErrorCode::kDevice, "device " + d.info_.name + " has no compute queue");
  d.queue_family_ = family;

  // Enable the optional storage/arithmetic features query_device_info found; shaders only use them
  // behind checks of DeviceInfo.
  VkPhysicalDeviceFeatures core{};
  vkGetPhysicalDeviceFeatures(d.physical_, &core);

  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{};
  dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
  dot.shaderIntegerDotProduct = VK_TRUE;
  VkPhysicalDeviceVulkan12Features e12{};
  e12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  if (d.info_.integer_dot) e12.pNext = &dot;
  e12.shaderFloat16 = d.info_.shader_float16 ? VK_TRUE : VK_FALSE;
  e12.shaderInt8 = d.info_.shader_int8 ? VK_TRUE : VK_FALSE;
  e12.storageBuffer8BitAccess = d.info_.storage_8bit ? VK_TRUE : VK_FALSE;
  VkPhysicalDeviceVulkan11Features e11{};
  e11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  e11.pNext = &e12;
  e11.storageBuffer16BitAccess = d.info_.storage_16bit ? VK_TRUE : VK_FALSE;
  VkPhysicalDeviceFeatures2 enabled{};
  enabled.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  enabled.pNext = &e11;
  enabled.features.shaderInt16 = core.shaderInt16;
  enabled.features.shaderInt64 = core.shaderInt64;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.pNext = &enabled;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  // The int8 dot-product kernels' SPIR-V (OpSDot) needs the extension on a Vulkan 1.2 instance.
  const char* dot_extension = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
  if (d.info_.integer_dot) {
    dci.enabledExtensionCount = 1;
    dci.ppEnabledExtensionNames = &dot_extension;
  }
  check(vkCreateDevice(d.physical_, &dci, nullptr, &d.device_), "vkCreateDevice(" + d.info_.name + ")");
  vkGetDeviceQueue(d.device_, family, 0, &d.queue_);

  VkCommandPoolCreateInfo pci{};
  pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = family;
  check(vkCreateCommandPool(d.device_, &pci, nullptr, &d.command_pool_), "vkCreateCommandPool");

  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(d.physical_, &props);
  std::vector<char> blob;
  d.disk_cache_ = options.disk_pipeline_cache && !pipeline_cache_path().empty();
  if (d.disk_cache_) {
    blob = read_file(pipeline_cache_path());
    if (!cache_matches(blob, props)) blob.clear();
  }
  VkPipelineCacheCreateInfo cci{};
  cci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  cci.initialDataSize = blob.size();
  cci.pInitialData = blob.empty() ? nullptr : blob.data();
  if (vkCreatePipelineCache(d.device_, &cci, nullptr, &d.pipeline_cache_) != VK_SUCCESS) {
    cci.initialDataSize = 0;
    cci.pInitialData = nullptr;
    check(vkCreatePipelineCache(d.device_, &cci, nullptr, &d.pipeline_cache_), "vkCreatePipelineCache");
  }
  spdlog::debug("vulkan device: {} ({}, {}), uma={}, halves by integer steps={}", d.info_.name, d.info_.type_name,
                d.info_.driver, d.info_.uma, d.info_.halves_by_integer_steps);
  return d;
}

Device::~Device() { destroy(); }

Device::Device(Device&& o) noexcept
    : instance_(std::move(o.instance_)),
      physical_(std::exchange(o.physical_, VK_NULL_HANDLE)),
      device_(std::exchange(o.device_, VK_NULL_HANDLE)),
      queue_(std::exchange(o.queue_, VK_NULL_HANDLE)),
      queue_family_(o.queue_family_),
      command_pool_(std::exchange(o.command_pool_, VK_NULL_HANDLE)),
      pipeline_cache_(std::exchange(o.pipeline_cache_, VK_NULL_HANDLE)),
      disk_cache_(o.disk_cache_),
      info_(std::move(o.info_)),
      memory_props_(o.memory_props_) {}

Device& Device::operator=(Device&& o) noexcept {
  if (this != &o) {
    destroy();
    instance_ = std::move(o.instance_);
    physical_ = std::exchange(o.physical_, VK_NULL_HANDLE);
    device_ = std::exchange(o.device_, VK_NULL_HANDLE);
    queue_ = std::exchange(o.queue_, VK_NULL_HANDLE);
    queue_family_ = o.queue_family_;
    command_pool_ = std::exchange(o.command_pool_, VK_NULL_HANDLE);
    pipeline_cache_ = std::exchange(o.pipeline_cache_, VK_NULL_HANDLE);
    disk_cache_ = o.disk_cache_;
    info_ = std::move(o.info_);
    memory_props_ = o.memory_props_;
  }
  return *this;
}

void Device::destroy() noexcept {
  if (device_ != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device_);
    if (pipeline_cache_ != VK_NULL_HANDLE) {
      save_pipeline_cache();
      vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
    }
    if (command_pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(device_, command_pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  device_ = VK_NULL_HANDLE;
  pipeline_cache_ = VK_NULL_HANDLE;
  command_pool_ = VK_NULL_HANDLE;
  queue_ = VK_NULL_HANDLE;
  physical_ = VK_NULL_HANDLE;
}

void Device::save_pipeline_cache() const {
  if (!disk_cache_ || pipeline_cache_ == VK_NULL_HANDLE) return;
  size_t size = 0;
  if (vkGetPipelineCacheData(device_, pipeline_cache_, &size, nullptr) != VK_SUCCESS || size == 0) return;
  std::vector<char> blob(size);
  if (vkGetPipelineCacheData(device_, pipeline_cache_, &size, blob.data()) != VK_SUCCESS) return;
  blob.resize(size);
  // Write a temporary file and rename it, so a concurrent reader never sees half a cache.
  std::error_code ec;
  const std::filesystem::path path = pipeline_cache_path();
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return;
  const std::filesystem::path tmp = path.string() + ".tmp" + std::to_string(reinterpret_cast<uintptr_t>(this));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(blob.data(), static_cast<std::streamsize>(blob.size()));
    if (!out) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

uint64_t Device::max_binding_bytes() const {
  uint64_t limit = info_.max_storage_buffer_range;
  if (info_.max_allocation_size != 0) limit = std::min(limit, info_.max_allocation_size);
  return limit;
}

uint64_t Device::max_texel_binding_bytes() const {
  const uint64_t texels = info_.max_texel_buffer_elements * 16;
  return texels == 0 ? max_binding_bytes() : std::min(max_binding_bytes(), texels);
}

Buffer Device::create_buffer(uint64_t size, BufferKind kind) const {
  if (size == 0) throw Error(ErrorCode::kInvalidArgument, "create_buffer: size 0");
  if (info_.max_allocation_size != 0 && size > info_.max_allocation_size) {
    throw Error(ErrorCode::kOutOfMemory, "buffer of " + std::to_string(size) + " bytes exceeds maxMemoryAllocationSize " +
                                             std::to_string(info_.max_allocation_size));
  }
  Buffer b;
  b.device_ = device_;
  b.kind_ = kind;
  b.size_ = size;
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  const bool texel = kind == BufferKind::kStorage && size >= 16 && size / 16 <= info_.max_texel_buffer_elements;
  if (texel && info_.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    // One llvmpipe variant per pipeline, so its disk cache hits on every restart (texel_sizing.h);
    // the view then covers the padding too, which no kernel reads.
    const uint64_t padded = single_variant_texel_bytes(size);
    const bool fits = padded / 16 <= info_.max_texel_buffer_elements &&
                      (info_.max_allocation_size == 0 || padded <= info_.max_allocation_size);
    if (fits) bci.size = padded;
  }
  if (texel) bci.usage |= VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &bci, nullptr, &b.buffer_), "vkCreateBuffer");
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(device_, b.buffer_, &req);

  constexpr VkMemoryPropertyFlags kLocal = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  constexpr VkMemoryPropertyFlags kVisible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  constexpr VkMemoryPropertyFlags kCoherent = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  constexpr VkMemoryPropertyFlags kCached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  uint32_t type = UINT32_MAX;
  switch (kind) {
    case BufferKind::kStorage:
      if (info_.uma) type = find_memory_type(memory_props_, req.memoryTypeBits, kLocal | kVisible | kCoherent, kCached);
      if (type == UINT32_MAX) type = find_memory_type(memory_props_, req.memoryTypeBits, kLocal, 0);
      if (type == UINT32_MAX) type = find_memory_type(memory_props_, req.memoryTypeBits, 0, 0);
      break;
    case BufferKind::kStaging:
      type = find_memory_type(memory_props_, req.memoryTypeBits, kVisible | kCoherent, 0);
      break;
    case BufferKind::kReadback:
      type = find_memory_type(memory_props_, req.memoryTypeBits, kVisible, kCached | kCoherent);
      break;
  }
  if (type == UINT32_MAX) throw Error(ErrorCode::kDevice, "no suitable memory type for a buffer");
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  check(vkAllocateMemory(device_, &mai, nullptr, &b.memory_),
        "vkAllocateMemory(" + std::to_string(req.size) + " bytes)");
  check(vkBindBufferMemory(device_, b.buffer_, b.memory_, 0), "vkBindBufferMemory");
  const VkMemoryPropertyFlags flags = memory_props_.memoryTypes[type].propertyFlags;
  b.coherent_ = (flags & kCoherent) != 0;
  if (flags & kVisible) check(vkMapMemory(device_, b.memory_, 0, VK_WHOLE_SIZE, 0, &b.mapped_), "vkMapMemory");
  if (texel) {
    VkBufferViewCreateInfo vci{};
    vci.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO;
    vci.buffer = b.buffer_;
    vci.format = VK_FORMAT_R32G32B32A32_UINT;  // uniform texel buffer support is required for it
    vci.offset = 0;
    vci.range = bci.size / 16 * 16;
    check(vkCreateBufferView(device_, &vci, nullptr, &b.texel_view_), "vkCreateBufferView");
  }
  return b;
}

SplitBuffer Device::create_split_buffer(uint64_t rows, uint64_t row_bytes, uint64_t max_part_bytes) const {
  if (rows == 0 || row_bytes == 0) throw Error(ErrorCode::kInvalidArgument, "create_split_buffer: empty tensor");
  const uint64_t limit = max_part_bytes == 0 ? max_binding_bytes() : std::min(max_part_bytes, max_binding_bytes());
  if (row_bytes > limit) {
    throw Error(ErrorCode::kInvalidArgument, "one row of " + std::to_string(row_bytes) +
                                                 " bytes exceeds the storage-buffer binding limit " + std::to_string(limit));
  }
  SplitBuffer s;
  s.rows = rows;
  s.row_bytes = row_bytes;
  s.rows_per_part = std::min(rows, limit / row_bytes);
  const uint64_t n_parts = (rows + s.rows_per_part - 1) / s.rows_per_part;
  for (uint64_t p = 0; p < n_parts; ++p) {
    s.parts.push_back(create_buffer(s.part_rows(p) * row_bytes, BufferKind::kStorage));
  }
  return s;
}

void Device::flush(const Buffer& b, uint64_t offset, uint64_t size) const {
  if (b.coherent() || !b.host_visible()) return;
  VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, b.memory(), 0, VK_WHOLE_SIZE};
  (void)offset;
  (void)size;
  check(vkFlushMappedMemoryRanges(device_, 1, &r), "vkFlushMappedMemoryRanges");
}

void Device::invalidate(const Buffer& b, uint64_t offset, uint64_t size) const {
  if (b.coherent() || !b.host_visible()) return;
  VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, b.memory(), 0, VK_WHOLE_SIZE};
  (void)offset;
  (void)size;
  check(vkInvalidateMappedMemoryRanges(device_, 1, &r), "vkInvalidateMappedMemoryRanges");
}

void Device::upload(const Buffer& dst, uint64_t dst_offset, const void* data, uint64_t size) const {
  if (size == 0) return;
  if (dst_offset > dst.size() || size > dst.size() - dst_offset) {
    throw Error(ErrorCode::kInvalidArgument, "upload of " + std::to_string(size) + " bytes at " +
                                                 std::to_string(dst_offset) + " overruns a buffer of " +
                                                 std::to_string(dst.size()));
  }
  if (dst.host_visible()) {
    std::memcpy(static_cast<char*>(dst.mapped()) + dst_offset, data, size);
    flush(dst);
    return;
  }
  Buffer staging = create_buffer(std::min(size, kStagingChunk), BufferKind::kStaging);
  CommandBuffer cmd = create_command_buffer();
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = std::min(size - done, staging.size());
    std::memcpy(staging.mapped(), static_cast<const char*>(data) + done, n);
    flush(staging);
    cmd.begin();
    cmd.copy(staging, 0, dst, dst_offset + done, n);
    cmd.barrier(Stage::kTransfer, Stage::kCompute);
    cmd.end();
    submit_and_wait(cmd);
    done += n;
  }
}

void Device::download(const Buffer& src, uint64_t src_offset, void* data, uint64_t size) const {
  if (size == 0) return;
  if (src_offset > src.size() || size > src.size() - src_offset) {
    throw Error(ErrorCode::kInvalidArgument, "download of " + std::to_string(size) + " bytes at " +
                                                 std::to_string(src_offset) + " overruns a buffer of " +
                                                 std::to_string(src.size()));
  }
  if (src.host_visible()) {
    invalidate(src);
    std::memcpy(data, static_cast<const char*>(src.mapped()) + src_offset, size);
    return;
  }
  Buffer staging = create_buffer(std::min(size, kStagingChunk), BufferKind::kReadback);
  CommandBuffer cmd = create_command_buffer();
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = std::min(size - done, staging.size());
    cmd.begin();
    cmd.barrier(Stage::kCompute, Stage::kTransfer);
    cmd.copy(src, src_offset + done, staging, 0, n);
    cmd.barrier(Stage::kTransfer, Stage::kHost);
    cmd.end();
    submit_and_wait(cmd);
    invalidate(staging);
    std::memcpy(static_cast<char*>(data) + done, staging.mapped(), n);
    done += n;
  }
}

void Device::upload_rows(const SplitBuffer& dst, uint64_t first_row, const void* data, uint64_t n_rows) const {
  if (first_row > dst.rows || n_rows > dst.rows - first_row) {
    throw Error(ErrorCode::kInvalidArgument, "upload_rows: rows out of range");
  }
  const char* src = static_cast<const char*>(data);
  for (uint64_t row = first_row; row < first_row + n_rows;) {
    const size_t part = dst.part_of_row(row);
    const uint64_t in_part = row - dst.first_row(part);
    const uint64_t n = std::min(first_row + n_rows - row, dst.part_rows(part) - in_part);
    upload(dst.parts[part], in_part * dst.row_bytes, src, n * dst.row_bytes);
    src += n * dst.row_bytes;
    row += n;
  }
}

CommandBuffer Device::create_command_buffer() const {
  CommandBuffer c;
  c.device_ = device_;
  c.pool_ = command_pool_;
  c.offset_alignment_ = std::max<uint64_t>(1, info_.min_storage_buffer_offset_alignment);
  c.max_range_ = info_.max_storage_buffer_range;
  for (int i = 0; i < 3; ++i) c.max_groups_[i] = info_.max_workgroup_count[i];
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = command_pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(device_, &ai, &c.cmd_), "vkAllocateCommandBuffers");
  return c;
}

Fence Device::create_fence(bool signalled) const {
  Fence f;
  f.device_ = device_;
  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  fci.flags = signalled ? VK_FENCE_CREATE_SIGNALED_BIT : 0;
  check(vkCreateFence(device_, &fci, nullptr, &f.fence_), "vkCreateFence");
  return f;
}

void Device::submit(const CommandBuffer& cmd, const Fence& fence) const {
  VkCommandBuffer handle = cmd.handle();
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &handle;
  check(vkQueueSubmit(queue_, 1, &si, fence.handle()), "vkQueueSubmit");
}

void Device::submit_and_wait(const CommandBuffer& cmd) const {
  Fence fence = create_fence();
  submit(cmd, fence);
  fence.wait();
}

void Device::wait_idle() const { check(vkDeviceWaitIdle(device_), "vkDeviceWaitIdle"); }

}  // namespace vks::vk
