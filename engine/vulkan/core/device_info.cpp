#include "engine/vulkan/core/device_info.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "engine/common/error.h"
#include "engine/vulkan/core/instance.h"

namespace vks::vk {

std::string_view device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

int device_type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
  }
}

std::string api_version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string describe(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "no Vulkan device found";
  std::string out = "available:";
  for (const DeviceInfo& d : devices) {
    out += " [" + std::to_string(d.index) + "] " + d.name + " (" + d.type_name + ")";
  }
  return out;
}

// Whether the device offers this extension.
bool has_device_extension(VkPhysicalDevice pd, std::string_view name) {
  uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> extensions(n);
  if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, extensions.data()) != VK_SUCCESS) return false;
  return std::any_of(extensions.begin(), extensions.begin() + n,
                     [&](const VkExtensionProperties& e) { return name == e.extensionName; });
}

}  // namespace

size_t select_device(const std::vector<DeviceInfo>& devices, std::string_view selector) {
  if (devices.empty()) {
    throw Error(ErrorCode::kNotFound, "no Vulkan device found (install a Vulkan driver, e.g. mesa-vulkan-drivers)");
  }
  if (selector.empty()) {
    size_t best = devices.size();
    for (size_t i = 0; i < devices.size(); ++i) {
      if (!devices[i].has_compute_queue) continue;
      if (best == devices.size() || device_type_rank(devices[i].type) > device_type_rank(devices[best].type)) best = i;
    }
    if (best == devices.size()) {
      throw Error(ErrorCode::kNotFound, "no Vulkan device has a compute queue; " + describe(devices));
    }
    return best;
  }
  const bool numeric = std::all_of(selector.begin(), selector.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::string needle = lower(selector);
  for (size_t i = 0; i < devices.size(); ++i) {
    const bool match = numeric ? std::to_string(devices[i].index) == selector
                               : lower(devices[i].name).find(needle) != std::string::npos;
    if (match && devices[i].has_compute_queue) return i;
  }
  throw Error(ErrorCode::kNotFound,
              "no Vulkan device matches '" + std::string(selector) + "' (VKSTREAM_DEVICE / --device takes an index " +
                  "or a name substring); " + describe(devices));
}

std::string device_selector(std::string_view selector) {
  if (!selector.empty()) return std::string(selector);
  const char* env = std::getenv("VKSTREAM_DEVICE");
  return env == nullptr ? std::string() : std::string(env);
}

#if defined(__aarch64__)
constexpr bool kAarch64Host = true;
#else
constexpr bool kAarch64Host = false;
#endif

bool halves_need_integer_steps(VkDriverId driver, bool aarch64_host) {
  return aarch64_host && driver == VK_DRIVER_ID_MESA_LLVMPIPE;
}

DeviceInfo query_device_info(VkPhysicalDevice pd, uint32_t index) {
  DeviceInfo info;
  info.index = index;

  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, nullptr, {}, {}, {}, {}};
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  subgroup.pNext = &driver;
  VkPhysicalDeviceMaintenance3Properties maint3{};
  maint3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
  maint3.pNext = &subgroup;
  VkPhysicalDeviceProperties2 props{};
  props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props.pNext = &maint3;
  vkGetPhysicalDeviceProperties2(pd, &props);
  const VkPhysicalDeviceProperties& p = props.properties;
  info.name = p.deviceName;
  info.type = p.deviceType;
  info.type_name = std::string(device_type_name(p.deviceType));
  info.driver = driver.driverInfo;
  info.halves_by_integer_steps = halves_need_integer_steps(driver.driverID, kAarch64Host);
  info.api_version = p.apiVersion;
  info.vendor_id = p.vendorID;
  info.device_id = p.deviceID;
  info.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  info.max_texel_buffer_elements = p.limits.maxTexelBufferElements;
  info.max_allocation_size = maint3.maxMemoryAllocationSize;
  info.max_push_constants_size = p.limits.maxPushConstantsSize;
  info.max_memory_allocations = p.limits.maxMemoryAllocationCount;
  info.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    info.max_workgroup_size[i] = p.limits.maxComputeWorkGroupSize[i];
    info.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  }
  info.max_shared_memory = p.limits.maxComputeSharedMemorySize;
  info.subgroup_size = subgroup.subgroupSize;
  info.min_storage_buffer_offset_alignment = p.limits.minStorageBufferOffsetAlignment;

  VkPhysicalDeviceShaderIntegerDotProductFeatures dot_features{};
  dot_features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
  const bool dot_extension = has_device_extension(pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  VkPhysicalDeviceVulkan12Features f12{};
  f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  if (dot_extension) f12.pNext = &dot_features;
  VkPhysicalDeviceVulkan11Features f11{};
  f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &f11;
  if (VK_API_VERSION_MINOR(p.apiVersion) >= 2 || VK_API_VERSION_MAJOR(p.apiVersion) > 1) {
    vkGetPhysicalDeviceFeatures2(pd, &features);
    info.shader_float16 = f12.shaderFloat16;
    info.shader_int8 = f12.shaderInt8;
    info.storage_8bit = f12.storageBuffer8BitAccess;
    info.storage_16bit = f11.storageBuffer16BitAccess;
    info.integer_dot = dot_extension && dot_features.shaderIntegerDotProduct;
  }
  if (info.integer_dot) {
    VkPhysicalDeviceShaderIntegerDotProductProperties dot_props{};
    dot_props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES;
    VkPhysicalDeviceProperties2 with_dot{};
    with_dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    with_dot.pNext = &dot_props;
    vkGetPhysicalDeviceProperties2(pd, &with_dot);
    info.integer_dot_accelerated = dot_props.integerDotProduct4x8BitPackedSignedAccelerated;
  }

  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h) {
    bool host_visible = false;
    for (uint32_t t = 0; t < mem.memoryTypeCount; ++t) {
      if (mem.memoryTypes[t].heapIndex == h && (mem.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) {
        host_visible = true;
      }
    }
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) info.device_local_bytes += mem.memoryHeaps[h].size;
    if (host_visible) info.host_visible_bytes += mem.memoryHeaps[h].size;
  }
  for (uint32_t t = 0; t < mem.memoryTypeCount; ++t) {
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if ((mem.memoryTypes[t].propertyFlags & want) == want) info.uma = true;
  }
  // Discrete GPUs expose small host-visible device-local windows (BAR); only integrated/CPU
  // devices are treated as unified memory.
  if (info.type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) info.uma = false;

  uint32_t n_families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_families, nullptr);
  std::vector<VkQueueFamilyProperties> families(n_families);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_families, families.data());
  for (const auto& f : families) {
    if (f.queueFlags & VK_QUEUE_COMPUTE_BIT) info.has_compute_queue = true;
  }
  if (VK_API_VERSION_MINOR(p.apiVersion) < 2 && VK_API_VERSION_MAJOR(p.apiVersion) == 1) {
    info.has_compute_queue = false;  // we need Vulkan 1.2
  }
  return info;
}

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  try {
    const std::shared_ptr<const Instance> instance = Instance::shared(false);
    const std::vector<VkPhysicalDevice> pds = instance->physical_devices();
    for (uint32_t i = 0; i < pds.size(); ++i) out.push_back(query_device_info(pds[i], i));
  } catch (const Error&) {
    out.clear();  // no loader, no driver: no devices
  }
  return out;
}

}  // namespace vks::vk
