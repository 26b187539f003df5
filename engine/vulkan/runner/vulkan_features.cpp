#include "engine/vulkan/runner/vulkan_features.h"

namespace vks::vk {

std::string missing_vulkan_feature(const LlamaModel& model) {
  if (model.config().has_recurrent_layers()) return "Gated DeltaNet layers (a recurrent state per sequence)";
  if (model.config().per_layer_input_dim > 0) return "per-layer inputs (Gemma 4's \"E\" models)";
  for (const LayerSpec& s : model.config().layers) {
    if (s.attention.output_gate) return "a sigmoid output gate on attention";
    if (s.ffn.shared_gated) return "a sigmoid-gated shared expert";
    if (s.attention.shares_kv()) return "KV-sharing layers";
  }
  return {};
}

}  // namespace vks::vk
