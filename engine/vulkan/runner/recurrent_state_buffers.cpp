#include "engine/vulkan/runner/recurrent_state_buffers.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/common/error.h"

namespace vks::vk {

RecurrentStateBuffers::RecurrentStateBuffers(const Device& device, const LlamaConfig& c, int32_t slots,
                                             uint64_t max_binding)
    : slots_(c.has_recurrent_layers() ? slots : 0) {
  if (slots_ == 0) return;
  const uint64_t n = static_cast<uint64_t>(slots_);
  for (const LayerSpec& l : c.layers) {
    Layer& layer = layers_.emplace_back();
    if (l.mixer != Mixer::kDeltaNet) continue;
    layer.conv_size = l.deltanet.conv_state_size();
    layer.delta_size = l.deltanet.delta_state_size();
    for (const uint64_t size : {layer.conv_size, layer.delta_size}) {
      if (n * size * sizeof(float) > max_binding) {
        throw Error(ErrorCode::kUnsupported,
                    fmt::format("{} recurrent state slots of {} MiB do not fit the device's {} MiB storage binding; "
                                "lower max_step_seqs",
                                slots_, size * sizeof(float) >> 20, max_binding >> 20));
      }
    }
    layer.conv = device.create_buffer(std::max<uint64_t>(n * layer.conv_size * sizeof(float), 16));
    layer.delta = device.create_buffer(std::max<uint64_t>(n * layer.delta_size * sizeof(float), 16));
  }
}

void RecurrentStateBuffers::record_zero(CommandBuffer& cmd) const {
  for (const Layer& l : layers_) {
    if (l.conv.valid()) cmd.fill(l.conv, 0, VK_WHOLE_SIZE, 0);
    if (l.delta.valid()) cmd.fill(l.delta, 0, VK_WHOLE_SIZE, 0);
  }
}

void RecurrentStateBuffers::record_copy(CommandBuffer& cmd, int32_t from, int32_t to) const {
  const auto f = static_cast<uint64_t>(from), t = static_cast<uint64_t>(to);
  for (const Layer& l : layers_) {
    if (l.conv_size == 0) continue;
    const uint64_t conv = l.conv_size * sizeof(float), delta = l.delta_size * sizeof(float);
    cmd.copy(l.conv, f * conv, l.conv, t * conv, conv);
    cmd.copy(l.delta, f * delta, l.delta, t * delta, delta);
  }
}

}  // namespace vks::vk
