#include "engine/vulkan/runner/vulkan_features.h"

namespace vks::vk {

std::string missing_vulkan_feature(const LlamaModel& model) {
  if (model.config().has_recurrent_layers()) return "Gated DeltaNet layers (a recurrent state per sequence)";
  for (const LayerSpec& s : model.config().layers) {
    if (s.attention.output_gate) return "a sigmoid output gate on attention";
    if (s.ffn.has_shared()) return "a shared expert";
    // The expert block adds its weighted sum to x in moe_combine_f32: nothing to post-norm between.
    if (s.post_norms && s.ffn.routed()) return "post-norms after an expert block";
  }
  return {};
}

}  // namespace vks::vk
