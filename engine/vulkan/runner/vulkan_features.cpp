#include "engine/vulkan/runner/vulkan_features.h"

namespace vks::vk {

std::string missing_vulkan_feature(const LlamaModel& model) {
  for (const LayerSpec& s : model.config().layers) {
    // The expert block adds its weighted sum to x in moe_combine_f32: nothing to post-norm between.
    if (s.post_norms && s.ffn.routed()) return "post-norms after an expert block";
  }
  return {};
}

}  // namespace vks::vk
