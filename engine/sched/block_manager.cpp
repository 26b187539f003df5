#include "engine/sched/block_manager.h"

#include <algorithm>

#include "engine/common/error.h"

namespace vks::sched {

uint64_t hash_block(uint64_t parent_hash, std::span<const int32_t> tokens) {
  // splitmix64-style mixing of each value into the running state: cheap and well distributed.
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  uint64_t h = mix(parent_hash ^ 0x5ca1ab1e0ddba11ULL);
  for (int32_t t : tokens) h = mix(h ^ static_cast<uint32_t>(t));
  return h == 0 ? 1 : h;  // 0 is the parent of the first block
}

BlockManager::BlockManager(int32_t num_blocks, int32_t block_size, bool prefix_caching)
    : block_size_(block_size), prefix_caching_(prefix_caching) {
  if (num_blocks <= 0 || block_size <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "block manager needs num_blocks > 0 and block_size > 0");
  }
  ref_.assign(num_blocks, 0);
  block_hash_.assign(num_blocks, 0);
  registered_.assign(num_blocks, false);
  block_tokens_.resize(num_blocks);
  free_pos_.resize(num_blocks);
  for (int32_t b = 0; b < num_blocks; ++b) free_pos_[b] = free_.insert(free_.end(), b);
}

PrefixMatch BlockManager::match_prefix(std::span<const int32_t> tokens) const {
  PrefixMatch m;
  const int32_t n = static_cast<int32_t>(tokens.size());
  if (prefix_caching_ && n > 0) {
    const int32_t max_blocks = (n - 1) / block_size_;  // keep one token to compute
    uint64_t parent = 0;
    for (int32_t i = 0; i < max_blocks; ++i) {
      auto chunk = tokens.subspan(static_cast<size_t>(i) * block_size_, block_size_);
      const uint64_t h = hash_block(parent, chunk);
      const int32_t b = find_cached(h, parent, chunk);
      if (b == kNoBlock) break;
      m.blocks.push_back(b);
      m.hashes.push_back(h);
      if (ref_[b] == 0) ++m.evictable;
      parent = h;
    }
  }
  return m;
}

int32_t BlockManager::find_cached(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) const {
  auto it = cache_.find(hash);
  if (it == cache_.end()) return kNoBlock;
  const int32_t b = it->second.block;
  // Guard against hash collisions: the stored tokens and parent must agree too.
  if (it->second.parent_hash != parent || !std::equal(tokens.begin(), tokens.end(), block_tokens_[b].begin())) {
    return kNoBlock;
  }
  return b;
}

void BlockManager::cut_match(PrefixMatch& match, size_t n) const {
  if (n >= match.blocks.size()) return;
  match.blocks.resize(n);
  match.hashes.resize(n);
  match.evictable = static_cast<int32_t>(std::count_if(match.blocks.begin(), match.blocks.end(), [&](int32_t b) {
    return b != kNoBlock && ref_[static_cast<size_t>(b)] == 0;
  }));
}

bool BlockManager::match_window(const PrefixMatch& full, std::span<const int32_t> tokens, size_t first, size_t n,
                                PrefixMatch& match, size_t& missing) const {
  if (n > full.hashes.size() || first > n) throw Error(ErrorCode::kInternal, "window match outside the full match");
  std::vector<int32_t> blocks(n, kNoBlock);
  int32_t evictable = 0;
  for (size_t i = n; i-- > first;) {  // deepest first: the caller cuts the match back past a missing one
    const uint64_t parent = i == 0 ? 0 : full.hashes[i - 1];
    const int32_t b = find_cached(full.hashes[i], parent, tokens.subspan(i * static_cast<size_t>(block_size_), block_size_));
    if (b == kNoBlock) {
      missing = i;
      return false;
    }
    blocks[i] = b;
    if (ref_[static_cast<size_t>(b)] == 0) ++evictable;
  }
  match.blocks = std::move(blocks);
  match.hashes.assign(full.hashes.begin(), full.hashes.begin() + static_cast<std::ptrdiff_t>(n));
  match.evictable = evictable;
  return true;
}

int32_t BlockManager::blocks_needed(int32_t held, int32_t n_tokens) const {
  const int32_t want = (n_tokens + block_size_ - 1) / block_size_;
  return std::max(0, want - held);
}

void BlockManager::acquire_prefix(SeqBlocks& seq, const PrefixMatch& match) {
  if (!seq.blocks.empty()) throw Error(ErrorCode::kInternal, "acquire_prefix on a sequence holding blocks");
  for (size_t i = 0; i < match.blocks.size(); ++i) {
    const int32_t b = match.blocks[i];
    seq.blocks.push_back(b);
    if (b == kNoBlock) continue;
    if (ref_[b] == 0) free_.erase(free_pos_[b]);
    ++ref_[b];
  }
  seq.hashes = match.hashes;
}

bool BlockManager::grow(SeqBlocks& seq, int32_t n_tokens) {
  const int32_t need = blocks_needed(static_cast<int32_t>(seq.blocks.size()), n_tokens);
  if (need > num_free()) return false;
  for (int32_t i = 0; i < need; ++i) seq.blocks.push_back(take_free_block());
  return true;
}

void BlockManager::commit(SeqBlocks& seq, std::span<const int32_t> tokens, int32_t n_computed) {
  const int32_t full = std::min<int32_t>(n_computed / block_size_, static_cast<int32_t>(seq.blocks.size()));
  for (int32_t i = static_cast<int32_t>(seq.hashes.size()); i < full; ++i) {
    const uint64_t parent = i == 0 ? 0 : seq.hashes[i - 1];
    auto chunk = tokens.subspan(static_cast<size_t>(i) * block_size_, block_size_);
    const uint64_t h = hash_block(parent, chunk);
    seq.hashes.push_back(h);
    if (!prefix_caching_) continue;
    const int32_t b = seq.blocks[i];
    if (b == kNoBlock || registered_[b] || cache_.count(h)) continue;  // an equal block is cached already: keep ours private
    cache_.emplace(h, CacheEntry{b, parent});
    registered_[b] = true;
    block_hash_[b] = h;
    block_tokens_[b].assign(chunk.begin(), chunk.end());
  }
}

void BlockManager::release(SeqBlocks& seq) {
  for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) {
    const int32_t b = *it;
    if (b == kNoBlock) continue;
    if (ref_[b] <= 0) throw Error(ErrorCode::kInternal, "block released more often than acquired");
    if (--ref_[b] == 0) push_free(b);
  }
  seq.blocks.clear();
  seq.hashes.clear();
}

void BlockManager::release_before(SeqBlocks& seq, size_t first) {
  for (size_t i = 0; i < std::min(first, seq.blocks.size()); ++i) {
    const int32_t b = seq.blocks[i];
    if (b == kNoBlock) continue;
    if (ref_[b] <= 0) throw Error(ErrorCode::kInternal, "block released more often than acquired");
    if (--ref_[b] == 0) push_free(b);
    seq.blocks[i] = kNoBlock;
  }
}

int32_t BlockManager::num_held(const SeqBlocks& seq) {
  return static_cast<int32_t>(std::count_if(seq.blocks.begin(), seq.blocks.end(), [](int32_t b) { return b != kNoBlock; }));
}

void BlockManager::shrink(SeqBlocks& seq, int32_t n_tokens) {
  const size_t keep = static_cast<size_t>((std::max(0, n_tokens) + block_size_ - 1) / block_size_);
  if (seq.hashes.size() > keep) throw Error(ErrorCode::kInternal, "shrink would drop a computed full block");
  while (seq.blocks.size() > keep) {
    const int32_t b = seq.blocks.back();
    seq.blocks.pop_back();
    if (b == kNoBlock) continue;
    if (ref_[b] <= 0) throw Error(ErrorCode::kInternal, "block released more often than acquired");
    if (--ref_[b] == 0) push_free(b);
  }
}

int32_t BlockManager::take_free_block() {
  const int32_t b = free_.front();
  free_.pop_front();
  if (registered_[b]) erase_cache_entry(b);  // LRU eviction
  ref_[b] = 1;
  return b;
}

void BlockManager::erase_cache_entry(int32_t block) {
  auto it = cache_.find(block_hash_[block]);
  if (it != cache_.end() && it->second.block == block) cache_.erase(it);
  registered_[block] = false;
  block_tokens_[block].clear();
}

void BlockManager::push_free(int32_t block) {
  // Registered blocks are worth keeping: most recently freed at the back, evicted last.
  free_pos_[block] = registered_[block] ? free_.insert(free_.end(), block) : free_.insert(free_.begin(), block);
}

std::string BlockManager::check_consistency() const {
  size_t zero_ref = 0;
  for (int32_t b = 0; b < num_blocks(); ++b) {
    if (ref_[b] < 0) return "negative ref count on block " + std::to_string(b);
    if (ref_[b] == 0) ++zero_ref;
  }
  if (zero_ref != free_.size()) return "free list size differs from the blocks with ref 0";
  std::vector<bool> seen(ref_.size(), false);
  for (int32_t b : free_) {
    if (ref_[b] != 0) return "block " + std::to_string(b) + " is in the free list with a reference";
    if (seen[b]) return "block " + std::to_string(b) + " is twice in the free list";
    seen[b] = true;
  }
  size_t registered = 0;
  for (int32_t b = 0; b < num_blocks(); ++b) {
    if (!registered_[b]) continue;
    ++registered;
    auto it = cache_.find(block_hash_[b]);
    if (it == cache_.end() || it->second.block != b) return "registered block " + std::to_string(b) + " has no cache entry";
  }
  if (registered != cache_.size()) return "cache entries without a registered block";
  return {};
}

}  // namespace vks::sched
