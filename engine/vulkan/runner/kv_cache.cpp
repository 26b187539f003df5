#include "engine/vulkan/runner/kv_cache.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/common/error.h"

namespace vks::vk {

KvCacheShape plan_kv_cache(const LlamaConfig& config, int32_t block_size, int32_t requested_blocks,
                           uint64_t kv_budget_bytes, uint64_t max_pool_bytes, KvType k_type, KvType v_type) {
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
    const uint32_t source = config.kv_layer(l);
    s.layer_pool.push_back(source == l ? s.n_layers++ : s.layer_pool[source]);
  }
  s.k_type = k_type;
  s.v_type = v_type;
  // One block of every layer's K and V pools, and of the larger pool of one layer.
  const uint64_t block_bytes = uint64_t(block_size) * s.bytes_per_token();
  const uint64_t pool_block_bytes =
      uint64_t(block_size) * std::max(kv_row_bytes(k_type, s.kv_dim), kv_row_bytes(v_type, s.kv_dim));
  uint64_t blocks = static_cast<uint64_t>(requested_blocks);
  if (blocks == 0) blocks = kv_budget_bytes / std::max<uint64_t>(1, block_bytes);
  const uint64_t max_blocks = std::min<uint64_t>(max_pool_bytes / pool_block_bytes, INT32_MAX / uint64_t(block_size));
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
  for (uint32_t l = 0; l < shape.n_layers; ++l) {
    k_.push_back(device.create_buffer(shape.k_pool_bytes()));
    v_.push_back(device.create_buffer(shape.v_pool_bytes()));
  }
}

}  // namespace vks::vk
