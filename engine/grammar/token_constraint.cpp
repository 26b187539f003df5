#include "engine/grammar/token_constraint.h"

#include <limits>

namespace vks::grammar {

namespace {
// Past this many interned states the table starts over (bounds memory per request: each state
// holds a 1 KiB transition row and possibly a mask).
constexpr size_t kMaxStates = 4096;
}  // namespace

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenIndex> index)
    : grammar_(std::move(grammar)), index_(std::move(index)) {
  current_ = intern(initial_state(*grammar_, &overflow_));
}

int32_t TokenConstraint::intern(MatchState state) {
  std::string key = state_key(state);
  const auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<int32_t>(states_.size());
  states_.push_back(Interned{std::move(state), std::vector<int32_t>(256, kUnknown), nullptr});
  ids_.emplace(std::move(key), id);
  return id;
}

int32_t TokenConstraint::transition(int32_t id, uint8_t byte) {
  const int32_t known = states_[static_cast<size_t>(id)].next[byte];
  if (known != kUnknown) return known;
  MatchState next = step(*grammar_, states_[static_cast<size_t>(id)].state, byte, &overflow_);
  const int32_t to = next.empty() ? kDead : intern(std::move(next));
  states_[static_cast<size_t>(id)].next[byte] = to;  // after intern(): states_ may have moved
  return to;
}

void TokenConstraint::reset_table() {
  MatchState keep = state();
  states_.clear();
  ids_.clear();
  current_ = intern(std::move(keep));
}

void TokenConstraint::walk(uint32_t node, int32_t state, TokenMask& mask) {
  const TokenIndex::Node& n = index_->nodes()[node];
  for (uint32_t c = n.first_child; c < n.first_child + n.child_count; ++c) {
    const TokenIndex::Node& child = index_->nodes()[c];
    const int32_t next = transition(state, child.byte);
    if (next < 0) continue;
    for (uint32_t t = child.tokens_begin; t < child.tokens_end; ++t) {
      const auto id = static_cast<uint32_t>(index_->node_tokens()[t]);
      mask[id >> 6] |= uint64_t{1} << (id & 63);
    }
    if (child.child_count > 0) walk(c, next, mask);
  }
}

void TokenConstraint::compute(TokenMask& mask) {
  mask.assign((static_cast<size_t>(index_->vocab_size()) + 63) / 64, 0);
  walk(0, current_, mask);
  if (grammar::can_end(state())) {
    for (TokenId id : index_->end_tokens()) {
      if (id >= 0 && id < index_->vocab_size()) mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
  }
}

const TokenMask& TokenConstraint::allowed() {
  if (states_.size() > kMaxStates) reset_table();
  auto& slot = states_[static_cast<size_t>(current_)].mask;
  if (!slot) {
    auto mask = std::make_shared<TokenMask>();
    compute(*mask);  // may grow states_: take the slot again below
    states_[static_cast<size_t>(current_)].mask = std::move(mask);
  }
  return *states_[static_cast<size_t>(current_)].mask;
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
  if (index_->is_end(id)) return grammar::can_end(state());
  const std::string& bytes = index_->bytes(id);
  if (bytes.empty()) return false;
  return accept_bytes(bytes);
}

bool TokenConstraint::accept_bytes(std::string_view bytes) {
  if (states_.size() > kMaxStates) reset_table();
  int32_t s = current_;
  for (char c : bytes) {
    s = transition(s, static_cast<uint8_t>(c));
    if (s < 0) return false;
  }
  current_ = s;
  return true;
}

}  // namespace vks::grammar
