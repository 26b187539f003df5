#pragma once
// Paged KV block accounting with a prefix cache (the runner owns the memory, this owns the ids).
// Blocks are ref-counted. A full block is identified by a hash chained over (parent hash, its
// token ids), so equal hashes mean equal prefixes; a new sequence reuses the longest cached chain.
// Only full blocks that were completely computed are registered, and a sequence only writes at
// positions past its computed prefix, so a cached block is never written (no copy-on-write).
// Free blocks sit in one LRU list: unregistered ones at the front (taken first), registered ones
// at the back in release order; taking a registered block from the free list evicts its entry.
#include <cstdint>
#include <list>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace vks::sched {

// Hash of one full block chained over its parent's hash (0 for the first block).
uint64_t hash_block(uint64_t parent_hash, std::span<const int32_t> tokens);

// A sequence's table entry for a block it does not hold (a window pool's block it gave back, or
// never needed: wholly before the first position its tokens see).
inline constexpr int32_t kNoBlock = -1;

// The blocks one sequence holds. hashes[i] is the chained hash of full block i, known for every
// full block whose tokens were all computed (or that came from the cache). In a window pool the
// first entries may be kNoBlock.
struct SeqBlocks {
  std::vector<int32_t> blocks;
  std::vector<uint64_t> hashes;
};

struct PrefixMatch {
  std::vector<int32_t> blocks;   // cached blocks covering the first blocks.size() * block_size tokens
                                 // (in a window pool, kNoBlock for those no token will see)
  std::vector<uint64_t> hashes;
  int32_t evictable = 0;         // how many of them are free (ref 0) and would leave the free list
};

class BlockManager {
 public:
  BlockManager(int32_t num_blocks, int32_t block_size, bool prefix_caching);

  int32_t block_size() const { return block_size_; }
  int32_t num_blocks() const { return static_cast<int32_t>(ref_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }  // cached ones included
  int32_t num_used() const { return num_blocks() - num_free(); }
  int32_t num_cached() const { return static_cast<int32_t>(cache_.size()); }
  bool prefix_caching() const { return prefix_caching_; }

  // Longest chain of cached full blocks prefixing `tokens`, leaving at least one token uncached
  // (the step that computes it produces the logits).
  PrefixMatch match_prefix(std::span<const int32_t> tokens) const;
  // Keeps only the first n blocks of a match (n <= its size), evictable recounted.
  void cut_match(PrefixMatch& match, size_t n) const;
  // The cached block registered under `hash` (chained over `parent`) holding `tokens`, or kNoBlock.
  int32_t find_cached(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) const;
  // A window pool's part of `full` (a match in the full pool, same hashes) cut to its first n blocks:
  // blocks [first, n) from this pool's cache, kNoBlock before first. False (match untouched) when
  // one of them is not cached here; `missing` is then the deepest such block.
  bool match_window(const PrefixMatch& full, std::span<const int32_t> tokens, size_t first, size_t n,
                    PrefixMatch& match, size_t& missing) const;
  // Counts one lookup in the hit statistics (once per request, at its first admission).
  void record_lookup(int32_t queried_tokens, int32_t hit_tokens) {
    query_tokens_ += queried_tokens;
    hit_tokens_ += hit_tokens;
  }

  // Blocks a sequence holding `held` blocks needs to cover n_tokens positions.
  int32_t blocks_needed(int32_t held, int32_t n_tokens) const;

  // Takes a reference on each matched block and makes them the sequence's first blocks (kNoBlock
  // entries stay kNoBlock).
  void acquire_prefix(SeqBlocks& seq, const PrefixMatch& match);
  // Makes seq.blocks cover n_tokens positions; false (and nothing changed) if the pool is short.
  bool grow(SeqBlocks& seq, int32_t n_tokens);
  // Registers the full blocks within the first n_computed of `tokens` in the prefix cache.
  void commit(SeqBlocks& seq, std::span<const int32_t> tokens, int32_t n_computed);
  // Drops the sequence's references (tail first, so its longest prefixes are evicted first).
  void release(SeqBlocks& seq);
  // Gives back the blocks before block `first` (entries become kNoBlock; registered ones stay
  // cached and evictable): a window pool's blocks no later token of the sequence sees.
  void release_before(SeqBlocks& seq, size_t first);
  // Blocks the sequence holds (kNoBlock entries not counted).
  static int32_t num_held(const SeqBlocks& seq);
  // Drops the blocks past those covering n_tokens positions (they held only rejected draft
  // tokens, never registered: a registered block is full of computed tokens).
  void shrink(SeqBlocks& seq, int32_t n_tokens);

  int64_t hit_tokens() const { return hit_tokens_; }
  int64_t query_tokens() const { return query_tokens_; }

  // Checks every internal invariant (ref counts vs free list, cache entries vs block hashes);
  // returns an empty string when consistent, else what is wrong. For tests.
  std::string check_consistency() const;

 private:
  struct CacheEntry {
    int32_t block = -1;
    uint64_t parent_hash = 0;
  };
  int32_t take_free_block();
  void erase_cache_entry(int32_t block);
  void push_free(int32_t block);

  int32_t block_size_;
  bool prefix_caching_;
  std::vector<int32_t> ref_;                       // [num_blocks]
  std::vector<uint64_t> block_hash_;               // [num_blocks] registered hash (valid if registered_)
  std::vector<bool> registered_;                   // [num_blocks]
  std::vector<std::vector<int32_t>> block_tokens_; // [num_blocks][block_size] of registered blocks
  std::list<int32_t> free_;                        // LRU: front is taken first
  std::vector<std::list<int32_t>::iterator> free_pos_;  // [num_blocks], valid while ref_ == 0
  std::unordered_map<uint64_t, CacheEntry> cache_;
  int64_t hit_tokens_ = 0;
  int64_t query_tokens_ = 0;
};

}  // namespace vks::sched
