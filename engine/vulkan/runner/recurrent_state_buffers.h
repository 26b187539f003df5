#pragma once
// The Gated DeltaNet layers' per-sequence states on the device (the CPU's RecurrentStatePool,
// engine/cpu/recurrent_state.h): per DeltaNet layer one conv buffer [slots][conv_kernel -
// 1][conv_channels] and one delta buffer [slots][n_v_heads][head_dim][head_dim]. Slots
// [0, live) belong to the step's sequences, the ones past them keep checkpoints
// (ModelRunner::recurrent_checkpoint_slots); a copy between slots is a device copy between steps.
// A chunk starting its sequence reads a zero state in the kernels themselves (no reset pass).
#include <cstdint>
#include <vector>

#include "engine/model/llama_config.h"
#include "engine/vulkan/core/buffer.h"
#include "engine/vulkan/core/command.h"
#include "engine/vulkan/core/device.h"

namespace vks::vk {

class RecurrentStateBuffers {
 public:
  RecurrentStateBuffers() = default;
  // No buffers for a model without DeltaNet layers. Throws vks::Error(kUnsupported) when one
  // layer's slots do not fit a storage binding of max_binding bytes, naming the slot count.
  RecurrentStateBuffers(const Device& device, const LlamaConfig& c, int32_t slots, uint64_t max_binding);
  int32_t slots() const { return slots_; }
  BufferView conv(uint32_t layer) const { return layers_[layer].conv.view(); }
  BufferView delta(uint32_t layer) const { return layers_[layer].delta.view(); }
  // Floats of one slot in a layer's conv and delta buffers.
  uint32_t conv_slot_floats(uint32_t layer) const { return static_cast<uint32_t>(layers_[layer].conv_size); }
  uint32_t delta_slot_floats(uint32_t layer) const { return static_cast<uint32_t>(layers_[layer].delta_size); }
  // Records zeroing every state (transfer stage).
  void record_zero(CommandBuffer& cmd) const;
  // Records copying slot `from` over slot `to` in every layer (transfer stage; slots in range).
  void record_copy(CommandBuffer& cmd, int32_t from, int32_t to) const;

 private:
  struct Layer {
    uint64_t conv_size = 0, delta_size = 0;  // floats a slot; 0 for an attention layer
    Buffer conv, delta;
  };
  int32_t slots_ = 0;
  std::vector<Layer> layers_;
};

}  // namespace vks::vk
