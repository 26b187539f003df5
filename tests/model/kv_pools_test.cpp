// Which layers keep their K/V in the window pool, and how the runners size the two pools.
#include "engine/model/kv_pools.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace vks {
namespace {

// n_layers attention layers; those whose index is in `windowed` slide a window of `window`.
LlamaConfig layers(uint32_t n_layers, std::vector<uint32_t> windowed, uint32_t window) {
  LlamaConfig c;
  c.n_layers = n_layers;
  for (uint32_t l = 0; l < n_layers; ++l) {
    LayerSpec spec;
    spec.attention.head_dim = 32;
    spec.attention.n_kv_heads = 2;
    if (std::find(windowed.begin(), windowed.end(), l) != windowed.end()) spec.attention.window = window;
    c.layers.push_back(spec);
  }
  return c;
}

TEST(KvPools, AWindowPoolOnlyBesideFullLayers) {
  const LlamaConfig gemma3 = layers(6, {0, 1, 2, 3, 4}, 512);
  EXPECT_EQ(window_pool_window(gemma3), 512u);
  EXPECT_TRUE(in_window_pool(gemma3, 0));
  EXPECT_FALSE(in_window_pool(gemma3, 5));
  EXPECT_EQ(n_window_pool_layers(gemma3), 5u);
  EXPECT_EQ(n_full_pool_layers(gemma3), 1u);
  LlamaConfig widest = gemma3;  // layers of two windows: the pool keeps the widest
  widest.layers[1].attention.window = 1024;
  EXPECT_EQ(window_pool_window(widest), 1024u);
  const LlamaConfig all = layers(4, {0, 1, 2, 3}, 512);  // every layer slides: one pool, the window a mask
  EXPECT_EQ(window_pool_window(all), 0u);
  EXPECT_FALSE(in_window_pool(all, 0));
  EXPECT_EQ(window_pool_window(layers(4, {}, 512)), 0u);
  LlamaConfig recurrent = gemma3;  // a recurrent model resumes prefixes from state checkpoints: one pool
  recurrent.layers[3].mixer = Mixer::kDeltaNet;
  EXPECT_EQ(window_pool_window(recurrent), 0u);
}

TEST(KvPools, WindowBlocksForTheStepLimits) {
  // Window 8, blocks of 4: 3 blocks a sequence between steps; a step of 16 tokens over 2 sequences
  // takes 4 more and one each where its chunk straddles a block.
  EXPECT_EQ(window_pool_blocks(8, 4, 2, 16), 2 * 3 + 4 + 2);
  EXPECT_EQ(window_pool_blocks(0, 4, 2, 16), 0);
  const LlamaConfig gemma3 = layers(6, {0, 1, 2, 3, 4}, 8);
  EXPECT_EQ(resolve_window_blocks(gemma3, -1, 4, 2, 16, 0), 12);
  EXPECT_EQ(resolve_window_blocks(gemma3, -1, 4, 2, 16, 10), 10) << "at most the full pool's blocks";
  EXPECT_EQ(resolve_window_blocks(gemma3, 5, 4, 2, 16, 10), 5);
  EXPECT_EQ(resolve_window_blocks(gemma3, 0, 4, 2, 16, 10), 0);
  EXPECT_EQ(resolve_window_blocks(layers(6, {}, 8), -1, 4, 2, 16, 10), 0);
}

TEST(KvPools, ABudgetNeverHoldsFewerPositionsThanOnePool) {
  // A full-pool block of every full layer costs 100 bytes, a window-pool block 500; 60,000 bytes
  // hold 100 blocks of one pool (600 each).
  const KvPoolSplit some = split_kv_budget(60000, 100, 500, 20);  // 10,000 to the window pool
  EXPECT_EQ(some.window_blocks, 20u);
  EXPECT_EQ(some.full_blocks, 500u);
  const KvPoolSplit too_many = split_kv_budget(60000, 100, 500, 150);  // more than one pool holds
  EXPECT_EQ(too_many.window_blocks, 100u);
  EXPECT_EQ(too_many.full_blocks, 100u);
  const KvPoolSplit none = split_kv_budget(60000, 600, 0, 0);
  EXPECT_EQ(none.full_blocks, 100u);
  EXPECT_EQ(none.window_blocks, 0u);
}

}  // namespace
}  // namespace vks
