#include "engine/grammar/token_index.h"

#include <algorithm>
#include <numeric>

namespace vks::grammar {

TokenIndex::TokenIndex(const Tokenizer& tok) {
  const int32_t n = tok.vocab_size();
  bytes_.resize(static_cast<size_t>(n));
  for (TokenId id = 0; id < n; ++id) {
    if (tok.is_eog(id)) {
      end_tokens_.push_back(id);
      continue;
    }
    const TokenType type = tok.token_type(id);
    if (type == TokenType::kControl || type == TokenType::kUnknown || type == TokenType::kUnused) continue;
    bytes_[static_cast<size_t>(id)] = tok.token_bytes(id);
  }
  build();
}

TokenIndex::TokenIndex(const std::vector<std::string>& token_bytes, std::vector<TokenId> end_tokens)
    : bytes_(token_bytes), end_tokens_(std::move(end_tokens)) {
  for (TokenId id : end_tokens_) {
    if (id >= 0 && id < vocab_size()) bytes_[static_cast<size_t>(id)].clear();
  }
  build();
}

bool TokenIndex::is_end(TokenId id) const {
  return std::find(end_tokens_.begin(), end_tokens_.end(), id) != end_tokens_.end();
}

// Sorting the ids by their bytes makes every trie node's tokens and children contiguous ranges;
// the trie is then laid out breadth-first so each node's children are adjacent.
void TokenIndex::build() {
  std::vector<TokenId> order;
  for (TokenId id = 0; id < vocab_size(); ++id) {
    if (!bytes_[static_cast<size_t>(id)].empty()) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [this](TokenId a, TokenId b) {
    const auto& x = bytes_[static_cast<size_t>(a)];
    const auto& y = bytes_[static_cast<size_t>(b)];
    return x != y ? x < y : a < b;
  });
  // A node covers the sorted ids [lo, hi) sharing its first `depth` bytes.
  struct Pending {
    size_t lo, hi, depth;
  };
  nodes_.assign(1, Node{});
  std::vector<Pending> queue{{0, order.size(), 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const Pending p = queue[q];
    size_t i = p.lo;
    nodes_[q].tokens_begin = static_cast<uint32_t>(node_tokens_.size());
    while (i < p.hi && bytes_[static_cast<size_t>(order[i])].size() == p.depth) node_tokens_.push_back(order[i++]);
    nodes_[q].tokens_end = static_cast<uint32_t>(node_tokens_.size());
    nodes_[q].first_child = static_cast<uint32_t>(nodes_.size());
    while (i < p.hi) {
      const auto byte = static_cast<uint8_t>(bytes_[static_cast<size_t>(order[i])][p.depth]);
      size_t j = i;
      while (j < p.hi && static_cast<uint8_t>(bytes_[static_cast<size_t>(order[j])][p.depth]) == byte) ++j;
      Node child;
      child.byte = byte;
      nodes_.push_back(child);
      queue.push_back({i, j, p.depth + 1});
      i = j;
    }
    nodes_[q].child_count = static_cast<uint32_t>(nodes_.size()) - nodes_[q].first_child;
  }
}

}  // namespace vks::grammar
