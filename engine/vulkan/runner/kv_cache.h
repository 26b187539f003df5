#pragma once
// The paged KV cache: one K pool and one V pool per layer, F16, Q8_0 or Q4_0, num_blocks blocks of block_size
// tokens each (layout in engine/vulkan/shaders/attn_params.h), or window_blocks for a layer in the
// window pool (engine/model/kv_pools.h). The scheduler owns which blocks belong to which sequence;
// this only holds the memory.
#include <cstdint>
#include <vector>

#include "engine/model/kv_type.h"
#include "engine/model/llama_config.h"
#include "engine/vulkan/core/buffer.h"
#include "engine/vulkan/core/device.h"

namespace vks::vk {

struct KvCacheShape {
  int32_t block_size = 16;
  int32_t num_blocks = 0;
  uint32_t kv_dim = 0;
  uint32_t n_layers = 0;  // pools of K and of V: the layers that keep their own
  // [model layers] the pool each layer writes and reads (a KV-sharing layer: its source's; a
  // recurrent layer: kNoPool), and [n_layers] the layer owning each pool.
  static constexpr uint32_t kNoPool = UINT32_MAX;
  std::vector<uint32_t> layer_pool, pool_owner;
  KvType k_type = KvType::kF16;
  KvType v_type = KvType::kF16;
  int32_t window_blocks = 0;           // the window pool's blocks (0: every layer in the full pool)
  std::vector<uint8_t> window_layers;  // [model layers] 1: the layer's pools are the window pool's size
  bool in_window_pool(uint32_t layer) const { return layer < window_layers.size() && window_layers[layer] != 0; }
  int32_t blocks_of(uint32_t layer) const { return in_window_pool(layer) ? window_blocks : num_blocks; }
  // The full pool's slots and a layer's own.
  uint64_t n_slots() const { return uint64_t(num_blocks) * uint64_t(block_size); }
  uint64_t n_slots(uint32_t layer) const { return uint64_t(blocks_of(layer)) * uint64_t(block_size); }
  uint64_t pool_bytes(KvType type) const { return n_slots() * kv_row_bytes(type, kv_dim); }
  uint64_t k_pool_bytes() const { return pool_bytes(k_type); }
  uint64_t v_pool_bytes() const { return pool_bytes(v_type); }
  uint64_t k_pool_bytes(uint32_t layer) const { return n_slots(layer) * kv_row_bytes(k_type, kv_dim); }
  uint64_t v_pool_bytes(uint32_t layer) const { return n_slots(layer) * kv_row_bytes(v_type, kv_dim); }
  // One token's K and V rows in every pool, and in the window-sized pools.
  uint64_t row_pair_bytes() const { return kv_row_bytes(k_type, kv_dim) + kv_row_bytes(v_type, kv_dim); }
  uint64_t bytes_per_token() const { return row_pair_bytes() * n_layers; }
  uint64_t window_bytes_per_token() const;
  uint64_t total_bytes() const;
  // uint index of a quantized pool's scale plane (attn_params.h: right after its values' plane;
  // unused for F16), in a layer's own pools.
  uint32_t k_scales_at(uint32_t layer) const { return scales_at(k_type, n_slots(layer)); }
  uint32_t v_scales_at(uint32_t layer) const { return scales_at(v_type, n_slots(layer)); }
  uint32_t scales_at(KvType type, uint64_t slots) const {
    return static_cast<uint32_t>(slots * kv_plane_bytes(type, kv_dim) / 4);
  }
};

// num_blocks = requested, or (0) as many as kv_budget_bytes holds at these types; clamped so one
// pool fits one storage binding (max_pool_bytes). window_blocks > 0 for a model with a window pool
// (window_pool_window > 0) gives its window layers pools of that many blocks (clamped the same way),
// and a budget is spent on them first. Throws vks::Error(kInvalidArgument) for block_size < 1 or a
// result below one block, kUnsupported for a quantized pool of a model whose head size is not a
// multiple of 32.
KvCacheShape plan_kv_cache(const LlamaConfig& config, int32_t block_size, int32_t requested_blocks,
                           uint64_t kv_budget_bytes, uint64_t max_pool_bytes, KvType k_type = KvType::kF16,
                           KvType v_type = KvType::kF16, int32_t window_blocks = 0);

class KvCache {
 public:
  KvCache(const Device& device, const KvCacheShape& shape);
  const KvCacheShape& shape() const { return shape_; }
  BufferView k(uint32_t layer) const { return k_[shape_.layer_pool[layer]].view(); }
  BufferView v(uint32_t layer) const { return v_[shape_.layer_pool[layer]].view(); }
  const Buffer& k_buffer(uint32_t layer) const { return k_[shape_.layer_pool[layer]]; }
  const Buffer& v_buffer(uint32_t layer) const { return v_[shape_.layer_pool[layer]]; }
  uint32_t n_slots() const { return static_cast<uint32_t>(shape_.num_blocks * shape_.block_size); }
  uint32_t n_slots(uint32_t layer) const { return static_cast<uint32_t>(shape_.n_slots(layer)); }

 private:
  KvCacheShape shape_;
  std::vector<Buffer> k_, v_;  // [shape.n_layers] pools, each [n_slots(owner)][kv_dim] values of its type
};

}  // namespace vks::vk
