#include "engine/grammar/token_constraint.h"

#include <limits>

namespace vks::grammar {

namespace {
constexpr size_t kMaxCachedStates = 4096;
}

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenIndex> index)
    : grammar_(std::move(grammar)), index_(std::move(index)) {
  state_ = initial_state(*grammar_, &overflow_);
}

void TokenConstraint::walk(uint32_t node, const MatchState& state, TokenMask& mask) {
  const TokenIndex::Node& n = index_->nodes()[node];
  for (uint32_t c = n.first_child; c < n.first_child + n.child_count; ++c) {
    const TokenIndex::Node& child = index_->nodes()[c];
    MatchState next = step(*grammar_, state, child.byte, &overflow_);
    if (next.empty()) continue;
    for (uint32_t t = child.tokens_begin; t < child.tokens_end; ++t) {
      const auto id = static_cast<uint32_t>(index_->node_tokens()[t]);
      mask[id >> 6] |= uint64_t{1} << (id & 63);
    }
    if (child.child_count > 0) walk(c, next, mask);
  }
}

void TokenConstraint::compute(TokenMask& mask) {
  mask.assign((static_cast<size_t>(index_->vocab_size()) + 63) / 64, 0);
  walk(0, state_, mask);
  if (grammar::can_end(state_)) {
    for (TokenId id : index_->end_tokens()) {
      if (id >= 0 && id < index_->vocab_size()) mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
  }
}

const TokenMask& TokenConstraint::allowed() {
  if (current_) return *current_;
  std::string key = state_key(state_);
  const auto it = cache_.find(key);
  if (it != cache_.end()) {
    current_ = it->second;
    return *current_;
  }
  auto mask = std::make_shared<TokenMask>();
  compute(*mask);
  if (cache_.size() >= kMaxCachedStates) cache_.clear();
  cache_.emplace(std::move(key), mask);
  current_ = std::move(mask);
  return *current_;
}

size_t TokenConstraint::apply(std::span<float> logits) {
  const TokenMask& m = allowed();
  size_t kept = 0;
  const size_t n = std::min(logits.size(), static_cast<size_t>(index_->vocab_size()));
  for (size_t i = 0; i < n; ++i) {
    if ((m[i >> 6] >> (i & 63)) & 1u) {
      ++kept;
    } else {
      logits[i] = -std::numeric_limits<float>::infinity();
    }
  }
  for (size_t i = n; i < logits.size(); ++i) logits[i] = -std::numeric_limits<float>::infinity();
  return kept;
}

bool TokenConstraint::accept(TokenId id) {
  if (id < 0 || id >= index_->vocab_size()) return false;
  if (index_->is_end(id)) return grammar::can_end(state_);
  const std::string& bytes = index_->bytes(id);
  if (bytes.empty()) return false;
  MatchState s = state_;
  for (char c : bytes) {
    s = step(*grammar_, s, static_cast<uint8_t>(c), &overflow_);
    if (s.empty()) return false;
  }
  state_ = std::move(s);
  current_.reset();
  return true;
}

}  // namespace vks::grammar
