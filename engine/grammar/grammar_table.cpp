#include "engine/grammar/grammar_table.h"

namespace vks::grammar {

namespace {
// Past this many states the table starts over (bounds memory: each state holds a 1 KiB
// transition row and possibly a mask).
constexpr size_t kMaxStates = 4096;
}  // namespace

GrammarTable::GrammarTable(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenIndex> index)
    : grammar_(std::move(grammar)), index_(std::move(index)) {}

int32_t GrammarTable::intern(MatchState state) {
  std::string key = state_key(state);
  const auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<int32_t>(states_.size());
  states_.push_back(Interned{std::move(state), std::vector<int32_t>(256, kUnknown), nullptr});
  ids_.emplace(std::move(key), id);
  return id;
}

int32_t GrammarTable::transition(int32_t id, uint8_t byte) {
  const int32_t known = states_[static_cast<size_t>(id)].next[byte];
  if (known != kUnknown) return known;
  bool overflow = false;
  MatchState next = step(*grammar_, states_[static_cast<size_t>(id)].state, byte, &overflow);
  if (overflow) overflow_ = true;
  const int32_t to = next.empty() ? kDead : intern(std::move(next));
  states_[static_cast<size_t>(id)].next[byte] = to;  // after intern(): states_ may have moved
  return to;
}

void GrammarTable::refresh(Ref& ref, const MatchState& state) {
  if (states_.size() > kMaxStates) {
    states_.clear();
    ids_.clear();
    ++generation_;
  }
  if (ref.generation != generation_) {
    ref.id = intern(state);
    ref.generation = generation_;
  }
}

void GrammarTable::start(Ref& ref, MatchState& state) {
  bool overflow = false;
  state = initial_state(*grammar_, &overflow);
  if (overflow) overflow_ = true;
  std::lock_guard lock(mu_);
  ref.generation = 0;
  refresh(ref, state);
}

bool GrammarTable::advance(Ref& ref, MatchState& state, std::string_view bytes) {
  std::lock_guard lock(mu_);
  refresh(ref, state);
  int32_t s = ref.id;
  for (char c : bytes) {
    s = transition(s, static_cast<uint8_t>(c));
    if (s < 0) return false;
  }
  ref.id = s;
  state = states_[static_cast<size_t>(s)].state;
  return true;
}

void GrammarTable::walk(uint32_t node, int32_t state, TokenMask& mask) {
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

std::shared_ptr<const TokenMask> GrammarTable::mask(Ref& ref, const MatchState& state) {
  std::lock_guard lock(mu_);
  refresh(ref, state);
  if (auto cached = states_[static_cast<size_t>(ref.id)].mask) return cached;
  auto mask = std::make_shared<TokenMask>((static_cast<size_t>(index_->vocab_size()) + 63) / 64, 0);
  walk(0, ref.id, *mask);  // may grow states_ (never past a reset: refresh() runs only above)
  if (grammar::can_end(state)) {
    for (TokenId id : index_->end_tokens()) {
      if (id >= 0 && id < index_->vocab_size()) (*mask)[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
  }
  states_[static_cast<size_t>(ref.id)].mask = mask;
  return mask;
}

}  // namespace vks::grammar
