#pragma once
// The recurrent state of a model's Gated DeltaNet layers (LayerSpec::deltanet), one slot per live
// sequence: in each DeltaNet layer, the conv's previous conv_kernel-1 inputs and one delta-rule
// matrix per value head. It lives beside the paged KV (which the attention layers keep using); a
// sequence's slot is zeroed when it starts at position 0 and advanced by every token it runs. A
// state cannot be rolled back; it can be copied whole, which is how a prefix's state is kept for
// reuse (checkpoint slots past the live ones, engine/sched/state_checkpoints.h).
#include <cstdint>
#include <vector>

#include "engine/common/zeroed_array.h"
#include "engine/model/llama_config.h"

namespace vks {

// One layer's state of one sequence.
struct RecurrentState {
  float* conv = nullptr;   // [conv_kernel - 1][conv_channels], oldest input first
  float* delta = nullptr;  // [n_v_heads][head_dim (k)][head_dim (v)]
};

class RecurrentStatePool {
 public:
  // Empty (no layers) for a model without DeltaNet layers. Zeroed lazily: a slot costs memory once used.
  RecurrentStatePool(const LlamaConfig& c, int32_t slots);
  int32_t slots() const { return slots_; }
  // Bytes of one slot, every layer.
  uint64_t slot_bytes() const;
  // Zeroes a slot's state in every layer (a sequence starting at position 0).
  void reset(int32_t slot);
  // Copies slot `from`'s state, every layer, over slot `to`.
  void copy(int32_t from, int32_t to);
  RecurrentState at(size_t layer, int32_t slot);

 private:
  struct Layer {
    uint64_t conv_size = 0, delta_size = 0;  // floats per slot; 0 for an attention layer
    ZeroedArray<float> conv, delta;
  };
  int32_t slots_ = 0;
  std::vector<Layer> layers_;
};

}  // namespace vks
