#include "engine/vulkan/runner/vulkan_features.h"

namespace vks::vk {

std::string missing_vulkan_feature(const LlamaModel& model) {
  if (model.config().has_recurrent_layers()) return "Gated DeltaNet layers (a recurrent state per sequence)";
  for (const LayerSpec& s : model.config().layers) {
    if (s.attention.output_gate) return "a sigmoid output gate on attention";
    if (s.ffn.shared_gated) return "a sigmoid-gated shared expert";
  }
  return {};
}

}  // namespace vks::vk
