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
  return c;
}

TEST(RunnerKvCache, SizesFromBudgetOrCount) {
  const LlamaConfig c = tinyllama();  // kv_dim 256: 16 tokens x 256 x 2 bytes = 8 KiB per block per pool
  const KvCacheShape s = plan_kv_cache(c, 16, 0, 44ull * 8192 * 100, 128ull << 20);  // 100 blocks of 44 pools
  EXPECT_EQ(s.num_blocks, 100);
  EXPECT_EQ(s.pool_bytes(), 100ull * 8192);
  EXPECT_EQ(s.total_bytes(), 44ull * 8192 * 100);
  EXPECT_EQ(plan_kv_cache(c, 16, 7, 0, 128ull << 20).num_blocks, 7);
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
