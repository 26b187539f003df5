#pragma once
// What the Vulkan loader can see: one DeviceInfo per physical device (for `vkstream devices`), and
// the pure selection rule (discrete > integrated > virtual > CPU, overridable by a selector).
#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vks::vk {

struct DeviceInfo {
  uint32_t index = 0;                    // position in vkEnumeratePhysicalDevices order
  std::string name;                      // "llvmpipe (LLVM 15.0.6, 256 bits)"
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  std::string type_name;                 // "discrete", "integrated", "virtual", "cpu", "other"
  std::string driver;                    // driverInfo, e.g. "Mesa 22.3.6 (LLVM 15.0.6)"
  uint32_t api_version = 0;              // VK_MAKE_API_VERSION packed
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint64_t device_local_bytes = 0;       // sum of DEVICE_LOCAL heaps
  uint64_t host_visible_bytes = 0;       // sum of heaps with a HOST_VISIBLE memory type
  bool uma = false;                      // a memory type is both DEVICE_LOCAL and HOST_VISIBLE|COHERENT
  uint64_t max_storage_buffer_range = 0; // bytes one storage-buffer binding may cover
  uint64_t max_texel_buffer_elements = 0; // texels one texel-buffer view may cover
  uint64_t max_allocation_size = 0;      // maxMemoryAllocationSize (Vulkan 1.1)
  uint32_t max_memory_allocations = 0;   // maxMemoryAllocationCount (every Buffer is one allocation)
  uint32_t max_push_constants_size = 0;
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_workgroup_size[3] = {0, 0, 0};
  uint32_t max_workgroup_count[3] = {0, 0, 0};
  uint32_t max_shared_memory = 0;
  uint32_t subgroup_size = 0;
  uint64_t min_storage_buffer_offset_alignment = 0;
  bool shader_float16 = false;
  bool shader_int8 = false;
  bool storage_16bit = false;            // storageBuffer16BitAccess
  bool storage_8bit = false;             // storageBuffer8BitAccess
  // VK_KHR_shader_integer_dot_product with its feature: the int8 dot-product kernels (Ops'
  // MatmulFamily::kDot) can run. Accelerated: the driver says 4x8-bit packed signed dot products
  // are faster than their emulation (lavapipe has the extension, not the acceleration).
  bool integer_dot = false;
  bool integer_dot_accelerated = false;
  bool has_compute_queue = false;
  // The shaders turn halves into floats with integer steps (shaders/halves.glsl), not
  // unpackHalf2x16, which this device's compiler gets wrong (halves_need_integer_steps).
  bool halves_by_integer_steps = false;
};

std::string_view device_type_name(VkPhysicalDeviceType t);
std::string api_version_string(uint32_t v);  // "1.3.230"

// Rank used by automatic selection: discrete 4 > integrated 3 > virtual 2 > cpu 1 > other 0.
int device_type_rank(VkPhysicalDeviceType t);

// Picks a device index into `devices` (devices without a compute queue are never picked).
// selector: "" = automatic (best rank, ties by enumeration order); all digits = DeviceInfo::index;
// otherwise a case-insensitive substring of the name. Throws vks::Error(kNotFound) naming the
// selector and the available devices when nothing matches, or when `devices` is empty.
size_t select_device(const std::vector<DeviceInfo>& devices, std::string_view selector);

// The selector a device is picked by: `selector` when given, else env VKSTREAM_DEVICE, else ""
// (automatic).
std::string device_selector(std::string_view selector);

// Whether a device's shader compiler gets unpackHalf2x16 wrong: lavapipe on an aarch64 host (Debian
// 12's, LLVM 15, aborts on it or returns wrong values; on x86 it is right).
bool halves_need_integer_steps(VkDriverId driver, bool aarch64_host);

// Properties, limits, features and memory of one physical device.
DeviceInfo query_device_info(VkPhysicalDevice device, uint32_t index);

// Enumerates the physical devices with a temporary instance. Returns an empty list when no Vulkan
// loader/driver/device exists (never throws for that case).
std::vector<DeviceInfo> list_devices();

}  // namespace vks::vk
