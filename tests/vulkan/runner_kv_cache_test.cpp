// KV cache sizing (no device needed).
#include <gtest/gtest.h>

#include "engine/common/error.h"
#include "engine/vulkan/runner/kv_cache.h"

namespace vks::vk {
namespace {

LlamaConfig tinyllama() {
  LlamaConfig c;
  c.dim = 2048;
  c.n_layers = 22;
  c.n_heads = 32;
  c.n_kv_heads = 4;
  c.head_dim = 64;
  c.layers.resize(c.n_layers);
  return c;
}

TEST(RunnerKvCache, SizesFromBudgetOrCount) {
  const LlamaConfig c = tinyllama();  // kv_dim 256: 16 tokens x 256 x 2 bytes = 8 KiB per block per pool
  const KvCacheShape s = plan_kv_cache(c, 16, 0, 44ull * 8192 * 100, 128ull << 20);  // 100 blocks of 44 pools
  EXPECT_EQ(s.num_blocks, 100);
  EXPECT_EQ(s.k_pool_bytes(), 100ull * 8192);
  EXPECT_EQ(s.v_pool_bytes(), 100ull * 8192);
  EXPECT_EQ(s.total_bytes(), 44ull * 8192 * 100);
  EXPECT_EQ(plan_kv_cache(c, 16, 7, 0, 128ull << 20).num_blocks, 7);
}

TEST(RunnerKvCache, KvSharingLayersHaveNoPoolsOfTheirOwn) {
  LlamaConfig c = tinyllama();  // Gemma 4 E-style: the last 2 layers read layers 19 and 20's pools
  c.layers[20].attention.window = 16;
  c.layers[18].attention.window = 16;
  c.layers[21].attention.kv_from = 19;
  c.layers[20].attention.kv_from = 18;
  const KvCacheShape s = plan_kv_cache(c, 16, 0, 40ull * 8192 * 100, 128ull << 20);
  EXPECT_EQ(s.n_layers, 20u);
  EXPECT_EQ(s.num_blocks, 100);  // the budget of 40 pools, not 44
  EXPECT_EQ(s.layer_pool[19], 19u);
  EXPECT_EQ(s.layer_pool[21], 19u);
  EXPECT_EQ(s.layer_pool[20], 18u);
}

TEST(RunnerKvCache, QuantizedPoolsHoldMoreBlocksInTheSameBudget) {
  // Per layer and token: F16 512 bytes each pool, Q8_0 256 + 8 * 4 = 288, Q4_0 128 + 8 * 4 = 160.
  const LlamaConfig c = tinyllama();
  const uint64_t budget = 44ull * 8192 * 100;
  const KvCacheShape both = plan_kv_cache(c, 16, 0, budget, 128ull << 20, KvType::kQ8_0, KvType::kQ8_0);
  EXPECT_EQ(both.bytes_per_token(), 22ull * 2 * 288);
  EXPECT_EQ(both.num_blocks, static_cast<int32_t>(budget / (16 * 22 * 2 * 288)));  // 177 against 100
  EXPECT_EQ(both.k_pool_bytes(), uint64_t(both.num_blocks) * 16 * 288);
  EXPECT_EQ(both.k_scales_at(0), uint64_t(both.num_blocks) * 16 * 256 / 4);
  const KvCacheShape keys = plan_kv_cache(c, 16, 10, 0, 128ull << 20, KvType::kQ8_0, KvType::kF16);
  EXPECT_EQ(keys.bytes_per_token(), 22ull * (288 + 512));
  EXPECT_EQ(keys.k_pool_bytes(), 10ull * 16 * 288);
  EXPECT_EQ(keys.v_pool_bytes(), 10ull * 16 * 512);
  const KvCacheShape q4 = plan_kv_cache(c, 16, 0, budget, 128ull << 20, KvType::kQ4_0, KvType::kQ4_0);
  EXPECT_EQ(q4.bytes_per_token(), 22ull * 2 * 160);
  EXPECT_EQ(q4.num_blocks, static_cast<int32_t>(budget / (16 * 22 * 2 * 160)));  // 320 against 100
  EXPECT_EQ(q4.v_pool_bytes(), uint64_t(q4.num_blocks) * 16 * 160);
  EXPECT_EQ(q4.v_scales_at(0), uint64_t(q4.num_blocks) * 16 * 256 / 8);  // after 8 nibbles a uint
  const KvCacheShape mixed = plan_kv_cache(c, 16, 10, 0, 128ull << 20, KvType::kQ8_0, KvType::kQ4_0);
  EXPECT_EQ(mixed.bytes_per_token(), 22ull * (288 + 160));
  EXPECT_EQ(mixed.k_scales_at(0), 10u * 16 * 256 / 4);
  EXPECT_EQ(mixed.v_scales_at(0), 10u * 16 * 256 / 8);
  // A block of 32 values must not straddle two heads.
  LlamaConfig small = c;
  small.head_dim = 48;
  small.layers.clear();
  for (int l = 0; l < 2; ++l) {
    LayerSpec spec;
    spec.attention.head_dim = 48;
    spec.attention.n_kv_heads = 4;
    small.layers.push_back(spec);
  }
  EXPECT_THROW(plan_kv_cache(small, 16, 10, 0, 128ull << 20, KvType::kF16, KvType::kQ8_0), Error);
  EXPECT_THROW(plan_kv_cache(small, 16, 10, 0, 128ull << 20, KvType::kQ4_0, KvType::kF16), Error);
  EXPECT_NO_THROW(plan_kv_cache(small, 16, 10, 0, 128ull << 20));
  EXPECT_THROW(parse_kv_type("q4_1"), Error);
  EXPECT_EQ(parse_kv_type("q8_0"), KvType::kQ8_0);
  EXPECT_EQ(parse_kv_type("q4_0"), KvType::kQ4_0);
  EXPECT_EQ(kv_type_name(KvType::kQ4_0), "q4_0");
}

TEST(RunnerKvCache, AWindowPoolIsPaidForFirstAndSizesItsLayersPools) {
  // 22 layers, five of every six windowed (gemma3's pattern, window 1024; layers 5, 11, 17 global):
  // 19 window layers take 20 blocks each, the budget left goes to the 3 global layers' pools.
  LlamaConfig c = tinyllama();
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    LayerSpec spec;
    spec.attention.head_dim = 64;
    spec.attention.n_kv_heads = 4;
    spec.attention.window = l % 6 == 5 ? 0 : 1024;
    c.layers[l] = spec;
  }
  const uint64_t block_pair = 2 * 8192;  // one block of one layer's K and V pools
  const uint64_t budget = 19 * 20 * block_pair + 3 * 100 * block_pair;
  const KvCacheShape s = plan_kv_cache(c, 16, 0, budget, 128ull << 20, KvType::kF16, KvType::kF16, 20);
  EXPECT_EQ(s.window_blocks, 20);
  EXPECT_EQ(s.num_blocks, 100);
  EXPECT_TRUE(s.in_window_pool(0));
  EXPECT_FALSE(s.in_window_pool(5));
  EXPECT_EQ(s.k_pool_bytes(0), 20ull * 8192);
  EXPECT_EQ(s.v_pool_bytes(5), 100ull * 8192);
  EXPECT_EQ(s.scales_at(KvType::kQ8_0, s.n_slots(0)), 20u * 16 * 256 / 4);
  EXPECT_EQ(s.total_bytes(), budget);
  EXPECT_EQ(s.window_bytes_per_token(), 19ull * 2 * 512);
  // Asked for more window blocks than one pool of the budget holds (30 blocks of every layer): both
  // pools get what one pool would.
  const KvCacheShape big = plan_kv_cache(c, 16, 0, budget, 128ull << 20, KvType::kF16, KvType::kF16, 1000);
  EXPECT_EQ(big.window_blocks, 30);
  EXPECT_EQ(big.num_blocks, 30);
  // A requested block count leaves the window pool as asked; no window layers, or none asked: one pool.
  EXPECT_EQ(plan_kv_cache(c, 16, 7, 0, 128ull << 20, KvType::kF16, KvType::kF16, 20).window_blocks, 20);
  EXPECT_EQ(plan_kv_cache(c, 16, 7, 0, 128ull << 20).window_blocks, 0);
  EXPECT_EQ(plan_kv_cache(tinyllama(), 16, 7, 0, 128ull << 20, KvType::kF16, KvType::kF16, 20).window_blocks, 0);
}

TEST(RunnerKvCache, ClampsToOneBindingAndRejectsNonsense) {
  const LlamaConfig c = tinyllama();
  EXPECT_EQ(plan_kv_cache(c, 16, 1 << 20, 0, 8192ull * 50).num_blocks, 50);
  EXPECT_THROW(plan_kv_cache(c, 0, 10, 0, 128ull << 20), Error);
  EXPECT_THROW(plan_kv_cache(c, 16, -1, 0, 128ull << 20), Error);
  EXPECT_THROW(plan_kv_cache(c, 16, 0, 1000, 128ull << 20), Error);  // budget below one block
}

}  // namespace
}  // namespace vks::vk
