#include "engine/sched/block_manager.h"

#include <gtest/gtest.h>

#include <numeric>

#include "engine/common/error.h"

namespace vks::sched {
namespace {

std::vector<int32_t> iota_tokens(int32_t n, int32_t start = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

TEST(BlockManager, GrowAndReleaseAccounting) {
  BlockManager bm(8, 4, true);
  SeqBlocks a;
  EXPECT_TRUE(bm.grow(a, 9));  // 3 blocks
  EXPECT_EQ(a.blocks.size(), 3u);
  EXPECT_EQ(bm.num_used(), 3);
  EXPECT_TRUE(bm.grow(a, 12));  // still 3
  EXPECT_EQ(bm.num_used(), 3);
  SeqBlocks b;
  EXPECT_FALSE(bm.grow(b, 21));  // needs 6, 5 free: nothing changes
  EXPECT_TRUE(b.blocks.empty());
  EXPECT_EQ(bm.num_used(), 3);
  EXPECT_TRUE(bm.grow(b, 20));
  EXPECT_EQ(bm.num_free(), 0);
  bm.release(a);
  bm.release(b);
  EXPECT_EQ(bm.num_used(), 0);
  EXPECT_EQ(bm.check_consistency(), "");
}

TEST(BlockManager, HashChainsOverParent) {
  const std::vector<int32_t> x = {1, 2, 3, 4};
  EXPECT_EQ(hash_block(0, x), hash_block(0, x));
  EXPECT_NE(hash_block(0, x), hash_block(hash_block(0, x), x));
  const std::vector<int32_t> y = {1, 2, 3, 5};
  EXPECT_NE(hash_block(0, x), hash_block(0, y));
}

TEST(BlockManager, PrefixReuseOnlyFullComputedBlocksAndKeepsOneToken) {
  BlockManager bm(16, 4, true);
  const auto tokens = iota_tokens(10);
  SeqBlocks a;
  ASSERT_TRUE(bm.grow(a, 10));
  bm.commit(a, tokens, 6);  // one full block computed
  EXPECT_EQ(bm.num_cached(), 1);
  bm.commit(a, tokens, 10);  // two full blocks, the partial third is not registered
  EXPECT_EQ(bm.num_cached(), 2);

  PrefixMatch m = bm.match_prefix(tokens);
  ASSERT_EQ(m.blocks.size(), 2u);
  EXPECT_EQ(m.blocks[0], a.blocks[0]);
  EXPECT_EQ(m.blocks[1], a.blocks[1]);
  EXPECT_EQ(m.evictable, 0);  // still held by a

  // Exactly 8 tokens: only 1 block may come from the cache (the last token must be computed).
  std::vector<int32_t> eight(tokens.begin(), tokens.begin() + 8);
  EXPECT_EQ(bm.match_prefix(eight).blocks.size(), 1u);
  // A different second block stops the chain after the first.
  auto other = tokens;
  other[5] = 7;
  EXPECT_EQ(bm.match_prefix(other).blocks.size(), 1u);
  // Same tokens at a different place in the chain do not match.
  std::vector<int32_t> shifted = {9, 9, 9, 9};
  shifted.insert(shifted.end(), tokens.begin(), tokens.end());
  EXPECT_EQ(bm.match_prefix(shifted).blocks.size(), 0u);

  SeqBlocks b;
  bm.acquire_prefix(b, m);
  ASSERT_TRUE(bm.grow(b, 10));
  EXPECT_EQ(b.blocks.size(), 3u);
  EXPECT_NE(b.blocks[2], a.blocks[2]);  // the partial block is private
  EXPECT_EQ(bm.num_used(), 4);
  bm.release(a);
  bm.release(b);
  EXPECT_EQ(bm.num_used(), 0);
  EXPECT_EQ(bm.num_cached(), 2);  // free but still cached
  m = bm.match_prefix(tokens);
  EXPECT_EQ(m.evictable, 2);
  EXPECT_EQ(bm.check_consistency(), "");
}

TEST(BlockManager, DisabledCacheNeverMatches) {
  BlockManager bm(8, 4, false);
  const auto tokens = iota_tokens(12);
  SeqBlocks a;
  ASSERT_TRUE(bm.grow(a, 12));
  bm.commit(a, tokens, 12);
  EXPECT_EQ(bm.num_cached(), 0);
  EXPECT_TRUE(bm.match_prefix(tokens).blocks.empty());
  bm.release(a);
  EXPECT_EQ(bm.check_consistency(), "");
}

TEST(BlockManager, EvictsLeastRecentlyUsedFirstAndUncachedBeforeCached) {
  BlockManager bm(6, 2, true);
  const auto p1 = iota_tokens(5, 100);  // 2 full blocks
  const auto p2 = iota_tokens(5, 200);
  SeqBlocks a, b;
  ASSERT_TRUE(bm.grow(a, 5));
  bm.commit(a, p1, 5);
  ASSERT_TRUE(bm.grow(b, 5));
  bm.commit(b, p2, 5);
  bm.release(a);  // p1 blocks freed first: least recently used
  bm.release(b);
  EXPECT_EQ(bm.num_cached(), 4);
  // Taking 2 blocks uses the 2 uncached (partial) blocks first: nothing evicted.
  SeqBlocks c;
  ASSERT_TRUE(bm.grow(c, 4));
  EXPECT_EQ(bm.num_cached(), 4);
  // Two more evict p1's blocks (tail block first), p2 survives.
  SeqBlocks d;
  ASSERT_TRUE(bm.grow(d, 3));
  EXPECT_EQ(bm.num_cached(), 2);
  EXPECT_EQ(bm.match_prefix(p1).blocks.size(), 0u);
  EXPECT_EQ(bm.match_prefix(p2).blocks.size(), 2u);
  // Reusing p2 refreshes it; freeing again puts it at the back.
  bm.release(c);
  bm.release(d);
  EXPECT_EQ(bm.check_consistency(), "");
}

TEST(BlockManager, SharedBlocksAreRefCounted) {
  BlockManager bm(8, 2, true);
  const auto t = iota_tokens(7);
  SeqBlocks a;
  ASSERT_TRUE(bm.grow(a, 7));
  bm.commit(a, t, 7);
  std::vector<SeqBlocks> others(3);
  for (auto& o : others) {
    bm.acquire_prefix(o, bm.match_prefix(t));
    ASSERT_EQ(o.blocks.size(), 3u);
  }
  bm.release(a);
  EXPECT_EQ(bm.num_used(), 3);  // the three shared full blocks
  for (auto& o : others) bm.release(o);
  EXPECT_EQ(bm.num_used(), 0);
  EXPECT_EQ(bm.check_consistency(), "");
}

TEST(BlockManager, DuplicateContentStaysPrivate) {
  BlockManager bm(8, 2, true);
  const auto t = iota_tokens(5);
  SeqBlocks a, b;
  ASSERT_TRUE(bm.grow(a, 5));
  ASSERT_TRUE(bm.grow(b, 5));  // computed concurrently: no hit
  bm.commit(a, t, 5);
  bm.commit(b, t, 5);
  EXPECT_EQ(bm.num_cached(), 2);
  EXPECT_EQ(b.hashes.size(), 2u);
  bm.release(a);
  bm.release(b);
  EXPECT_EQ(bm.check_consistency(), "");
  EXPECT_EQ(bm.match_prefix(t).blocks.size(), 2u);
}

TEST(BlockManager, RejectsBadSizes) {
  EXPECT_THROW(BlockManager(0, 16, true), Error);
  EXPECT_THROW(BlockManager(4, 0, true), Error);
}

TEST(BlockManager, ReleaseBeforeKeepsRegisteredBlocksCachedAndEvictable) {
  // A window pool's sequence gives back its first two blocks: they leave its table (kNoBlock), join
  // the free list and stay cached, so a later match still finds them until something takes them.
  BlockManager bm(6, 4, true);
  SeqBlocks a;
  const auto t = iota_tokens(16);
  ASSERT_TRUE(bm.grow(a, 16));
  bm.commit(a, t, 16);
  bm.release_before(a, 2);
  EXPECT_EQ(a.blocks[0], kNoBlock);
  EXPECT_EQ(a.blocks[1], kNoBlock);
  EXPECT_EQ(BlockManager::num_held(a), 2);
  EXPECT_EQ(bm.num_used(), 2);
  EXPECT_EQ(bm.num_cached(), 4);
  EXPECT_EQ(bm.check_consistency(), "");
  bm.release_before(a, 2);  // again: nothing left to give back there
  EXPECT_EQ(bm.num_used(), 2);
  bm.release(a);  // skips the kNoBlock entries
  EXPECT_EQ(bm.num_used(), 0);
  EXPECT_EQ(bm.check_consistency(), "");
  EXPECT_EQ(bm.match_prefix(iota_tokens(17)).blocks.size(), 4u);
}

TEST(BlockManager, MatchWindowNeedsEveryBlockFromFirstAndLeavesTheOthersOut) {
  // The full pool's match gives the hashes; the window pool holds blocks 1-3 of the chain but not 0.
  BlockManager full(8, 4, true), win(8, 4, true);
  const auto t = iota_tokens(17);
  SeqBlocks f, w;
  ASSERT_TRUE(full.grow(f, 16));
  full.commit(f, t, 16);
  full.release(f);
  ASSERT_TRUE(win.grow(w, 16));
  win.commit(w, t, 16);
  win.release_before(w, 1);
  SeqBlocks other;  // takes the free window block 0 of the chain (evicts it) and the unused ones
  ASSERT_TRUE(win.grow(other, 20));
  win.release(w);
  const PrefixMatch m = full.match_prefix(t);
  ASSERT_EQ(m.blocks.size(), 4u);
  PrefixMatch got;
  size_t missing = 99;
  EXPECT_FALSE(win.match_window(m, t, 0, 4, got, missing));
  EXPECT_EQ(missing, 0u);
  ASSERT_TRUE(win.match_window(m, t, 1, 4, got, missing));
  ASSERT_EQ(got.blocks.size(), 4u);
  EXPECT_EQ(got.blocks[0], kNoBlock);
  EXPECT_NE(got.blocks[1], kNoBlock);
  EXPECT_EQ(got.hashes, m.hashes);
  EXPECT_EQ(got.evictable, 3);
  SeqBlocks b;
  win.acquire_prefix(b, got);
  EXPECT_EQ(BlockManager::num_held(b), 3);
  EXPECT_EQ(win.check_consistency(), "");
  win.release(b);
  win.release(other);
  EXPECT_EQ(win.num_used(), 0);
  EXPECT_EQ(win.check_consistency(), "");
}

}  // namespace
}  // namespace vks::sched
