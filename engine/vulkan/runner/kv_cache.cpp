#include "engine/vulkan/runner/kv_cache.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/common/error.h"
#include "engine/model/kv_pools.h"

namespace vks::vk {

uint64_t KvCacheShape::window_bytes_per_token() const {
  if (window_blocks <= 0) return 0;
  const auto windowed = std::count_if(pool_owner.begin(), pool_owner.end(), [&](uint32_t l) { return in_window_pool(l); });
  return row_pair_bytes() * static_cast<uint64_t>(windowed);
}

uint64_t KvCacheShape::total_bytes() const {
  uint64_t bytes = 0;
  for (const uint32_t l : pool_owner) bytes += k_pool_bytes(l) + v_pool_bytes(l);
  return bytes;
}

KvCacheShape plan_kv_cache(const LlamaConfig& config, int32_t block_size, int32_t requested_blocks,
                           uint64_t kv_budget_bytes, uint64_t max_pool_bytes, KvType k_type, KvType v_type,
                           int32_t window_blocks) {
  if (block_size < 1 || block_size > 1024) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("KV block size {} must be in 1..1024", block_size));
  }
  if (requested_blocks < 0) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("KV block count {} is negative", requested_blocks));
  }
  require_kv_type_fits(config, k_type);
  require_kv_type_fits(config, v_type);
  KvCacheShape s;
  s.block_size = block_size;
  s.kv_dim = config.kv_dim();
  for (uint32_t l = 0; l < config.n_layers; ++l) {
    if (config.layers[l].mixer != Mixer::kAttention) {  // a recurrent layer keeps its state elsewhere
      s.layer_pool.push_back(KvCacheShape::kNoPool);
      continue;
    }
    const uint32_t source = config.kv_layer(l);
    if (source == l) s.pool_owner.push_back(l);
    s.layer_pool.push_back(source == l ? s.n_layers++ : s.layer_pool[source]);
  }
  s.k_type = k_type;
  s.v_type = v_type;
  const uint64_t pool_block_bytes =
      uint64_t(block_size) * std::max(kv_row_bytes(k_type, s.kv_dim), kv_row_bytes(v_type, s.kv_dim));
  const uint64_t max_blocks = std::min<uint64_t>(max_pool_bytes / pool_block_bytes, INT32_MAX / uint64_t(block_size));
  if (window_blocks > 0 && window_pool_window(config) > 0) {
    s.window_blocks = static_cast<int32_t>(std::min<uint64_t>(static_cast<uint64_t>(window_blocks), max_blocks));
    s.window_layers.assign(config.n_layers, 0);
    for (uint32_t l = 0; l < config.n_layers; ++l) s.window_layers[l] = in_window_pool(config, l) ? 1 : 0;
  }
  // A budget: split between the full pool's layers and the window pool's (kv_pools.h).
  uint64_t blocks = static_cast<uint64_t>(requested_blocks);
  if (blocks == 0) {
    const KvPoolSplit split =
        split_kv_budget(kv_budget_bytes, uint64_t(block_size) * (s.bytes_per_token() - s.window_bytes_per_token()),
                        uint64_t(block_size) * s.window_bytes_per_token(), static_cast<uint64_t>(s.window_blocks));
    blocks = split.full_blocks;
    if (s.window_blocks > 0) s.window_blocks = static_cast<int32_t>(std::max<uint64_t>(1, split.window_blocks));
  }
  if (blocks > max_blocks) {
    spdlog::warn("vulkan: KV cache clamped from {} to {} blocks (one layer's pool must fit a {} MiB binding)",
                 blocks, max_blocks, max_pool_bytes >> 20);
    blocks = max_blocks;
  }
  if (blocks == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("KV cache of {} bytes holds no block of {} tokens; raise the KV budget", kv_budget_bytes,
                            block_size));
  }
  s.num_blocks = static_cast<int32_t>(blocks);
  return s;
}

KvCache::KvCache(const Device& device, const KvCacheShape& shape) : shape_(shape) {
  for (const uint32_t l : shape.pool_owner) {
    k_.push_back(device.create_buffer(shape.k_pool_bytes(l)));
    v_.push_back(device.create_buffer(shape.v_pool_bytes(l)));
  }
}

}  // namespace vks::vk
