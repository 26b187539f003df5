#pragma once
// Turning VkResult failures into vks::Error(kDevice) with the call that failed and the result name.
#include <vulkan/vulkan.h>

#include <string_view>

#include "engine/common/error.h"

namespace vks::vk {

std::string_view result_name(VkResult r);

// Throws vks::Error(kDevice, "<what>: VK_ERROR_...") unless r is VK_SUCCESS
// (VK_ERROR_OUT_OF_*_MEMORY maps to kOutOfMemory).
void check(VkResult r, std::string_view what);

}  // namespace vks::vk
