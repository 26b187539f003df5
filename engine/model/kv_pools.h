#pragma once
// Which paged KV pool holds a layer's keys and values. A model with both sliding-window and
// full-attention layers keeps two pools with their own block ids: the full layers' (every position
// of a sequence) and the window layers' (a sequence holds only the blocks its next tokens can still
// see: the scheduler frees the others as it advances, so a 100k-token sequence on a 4k window holds
// ~4k positions there). A model whose attention layers all slide, or none, keeps one pool (the
// window is then only a mask: a lone window pool would need no full pool, which the scheduler does
// not model yet), and so does a model with recurrent layers.
#include <cstdint>

#include "engine/model/llama_config.h"

namespace vks {

// The window the second pool serves (the widest of the window layers: a block is freed only when
// no layer can see it), or 0 when the model keeps one pool.
uint32_t window_pool_window(const LlamaConfig& c);

// Whether layer l's keys and values are in the window pool (a KV-sharing layer's are its source's).
bool in_window_pool(const LlamaConfig& c, size_t layer);

// Attention layers keeping their own K/V in the window pool (in_window_pool), and in the full pool.
uint64_t n_window_pool_layers(const LlamaConfig& c);
uint64_t n_full_pool_layers(const LlamaConfig& c);

// Window-pool blocks that let max_seqs sequences run at once and a step hold max_step_tokens: a
// running sequence holds at most ceil((window - 1) / block_size) + 1 blocks between steps (the
// blocks its next token sees, the last one partly filled), plus those its step's chunk needs.
int32_t window_pool_blocks(uint32_t window, int32_t block_size, int32_t max_seqs, int32_t max_step_tokens);

// A KV budget split between the pools. The window pool gets the blocks asked for as long as the
// full pool still gets more (the full pool's sequences are never shorter than a window pool's):
// otherwise both get what one pool would (the budget over a block of every layer), so a window pool
// never costs a model the positions its one pool held, only saves where sequences outrun the window.
// full_block_bytes / window_block_bytes: one block of every layer in that pool, K and V.
struct KvPoolSplit {
  uint64_t full_blocks = 0;
  uint64_t window_blocks = 0;
};
KvPoolSplit split_kv_budget(uint64_t budget, uint64_t full_block_bytes, uint64_t window_block_bytes,
                            uint64_t window_blocks);

// The window pool a runner keeps when asked for `requested` blocks: -1 window_pool_blocks for its
// step limits (at most num_blocks where that is given, > 0), 0 none, n > 0 n; 0 for a model
// without a window pool.
int32_t resolve_window_blocks(const LlamaConfig& c, int32_t requested, int32_t block_size, int32_t max_step_seqs,
                              int32_t max_step_tokens, int32_t num_blocks);

}  // namespace vks
