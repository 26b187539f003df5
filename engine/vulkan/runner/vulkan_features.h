#pragma once
// What of a model's description (LayerSpec and the tensors it names) the Vulkan step recorder does
// not run yet. The runner factory sends such a model to the CPU backend (or refuses it under
// --vulkan), and VulkanRunner refuses it, rather than compute something else.
#include <string>

#include "engine/model/llama_model.h"

namespace vks::vk {

// Empty when the Vulkan runner runs every layer of `model`; else the first feature it lacks, in words.
std::string missing_vulkan_feature(const LlamaModel& model);

}  // namespace vks::vk
