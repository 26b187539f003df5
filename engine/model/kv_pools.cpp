#include "engine/model/kv_pools.h"

#include <algorithm>

namespace vks {

uint32_t window_pool_window(const LlamaConfig& c) {
  // A recurrent model resumes a cached prefix from a state checkpoint, which a window cut would
  // have to agree with: no such model has window layers, so it keeps one pool.
  if (c.has_recurrent_layers()) return 0;
  bool full = false;
  uint32_t window = 0;
  for (const LayerSpec& l : c.layers) {
    if (l.mixer != Mixer::kAttention) continue;
    if (l.attention.windowed()) {
      window = std::max(window, l.attention.window);
    } else {
      full = true;
    }
  }
  return full ? window : 0;
}

bool in_window_pool(const LlamaConfig& c, size_t layer) {
  const LayerSpec& l = c.layers[layer];
  return l.mixer == Mixer::kAttention && l.attention.windowed() && window_pool_window(c) > 0;
}

uint64_t n_window_pool_layers(const LlamaConfig& c) {
  uint64_t n = 0;
  for (size_t l = 0; l < c.layers.size(); ++l) n += in_window_pool(c, l) && !c.layers[l].attention.shares_kv() ? 1 : 0;
  return n;
}

uint64_t n_full_pool_layers(const LlamaConfig& c) { return c.n_attention_layers() - n_window_pool_layers(c); }

int32_t window_pool_blocks(uint32_t window, int32_t block_size, int32_t max_seqs, int32_t max_step_tokens) {
  if (window == 0 || block_size <= 0) return 0;
  const int64_t bs = block_size;
  const int64_t per_seq = (int64_t{window} - 1 + bs - 1) / bs + 1;
  const int64_t step = (int64_t{max_step_tokens} + bs - 1) / bs + std::max(0, max_seqs);  // a chunk may straddle a block
  return static_cast<int32_t>(std::min<int64_t>(INT32_MAX, int64_t{std::max(0, max_seqs)} * per_seq + step));
}

KvPoolSplit split_kv_budget(uint64_t budget, uint64_t full_block_bytes, uint64_t window_block_bytes,
                            uint64_t window_blocks) {
  const uint64_t full = std::max<uint64_t>(full_block_bytes, 1);
  if (window_blocks == 0 || window_block_bytes == 0) return {budget / full, 0};
  const uint64_t one_pool = budget / (full + window_block_bytes);
  if (window_blocks >= one_pool) return {one_pool, one_pool};
  return {(budget - window_blocks * window_block_bytes) / full, window_blocks};
}

int32_t resolve_window_blocks(const LlamaConfig& c, int32_t requested, int32_t block_size, int32_t max_step_seqs,
                              int32_t max_step_tokens, int32_t num_blocks) {
  const uint32_t window = window_pool_window(c);
  if (window == 0 || requested == 0) return 0;
  if (requested > 0) return requested;
  const int32_t blocks = window_pool_blocks(window, block_size, max_step_seqs, max_step_tokens);
  return num_blocks > 0 ? std::min(blocks, num_blocks) : blocks;
}

}  // namespace vks
