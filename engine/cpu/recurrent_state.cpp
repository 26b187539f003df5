#include "engine/cpu/recurrent_state.h"

#include <algorithm>

namespace vks {

RecurrentStatePool::RecurrentStatePool(const LlamaConfig& c, int32_t slots) : slots_(slots) {
  const size_t n = static_cast<size_t>(std::max(slots, 0));
  for (const LayerSpec& l : c.layers) {
    const bool recurrent = l.mixer == Mixer::kDeltaNet;
    const uint64_t conv = recurrent ? l.deltanet.conv_state_size() : 0;
    const uint64_t delta = recurrent ? l.deltanet.delta_state_size() : 0;
    layers_.push_back(Layer{conv, delta, ZeroedArray<float>(n * conv), ZeroedArray<float>(n * delta)});
  }
}

uint64_t RecurrentStatePool::slot_bytes() const {
  uint64_t floats = 0;
  for (const Layer& l : layers_) floats += l.conv_size + l.delta_size;
  return floats * sizeof(float);
}

void RecurrentStatePool::reset(int32_t slot) {
  for (Layer& l : layers_) {
    std::fill_n(l.conv.data() + slot * l.conv_size, l.conv_size, 0.0f);
    std::fill_n(l.delta.data() + slot * l.delta_size, l.delta_size, 0.0f);
  }
}

void RecurrentStatePool::copy(int32_t from, int32_t to) {
  for (Layer& l : layers_) {
    std::copy_n(l.conv.data() + from * l.conv_size, l.conv_size, l.conv.data() + to * l.conv_size);
    std::copy_n(l.delta.data() + from * l.delta_size, l.delta_size, l.delta.data() + to * l.delta_size);
  }
}

RecurrentState RecurrentStatePool::at(size_t layer, int32_t slot) {
  Layer& l = layers_[layer];
  return {l.conv.data() + slot * l.conv_size, l.delta.data() + slot * l.delta_size};
}

}  // namespace vks
