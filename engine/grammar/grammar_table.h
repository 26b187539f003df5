#pragma once
// The states of one grammar over one vocabulary, shared by every request using that grammar
// (thread-safe): distinct grammar states are numbered, their byte transitions filled in lazily and
// the token mask of each state computed once, by walking the vocabulary's byte trie (TokenIndex)
// only along bytes the state accepts. A walk costs one table lookup per trie node once its states
// are known (inside a JSON string every node at one depth reaches the same few states), and a
// state met before (by this request or another) costs nothing.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/token_index.h"

namespace vks::grammar {

using TokenMask = std::vector<uint64_t>;  // bit id set = allowed

inline bool mask_has(const TokenMask& m, TokenId id) {
  return (m[static_cast<size_t>(id) >> 6] >> (static_cast<unsigned>(id) & 63)) & 1u;
}

class GrammarTable {
 public:
  // A request's position: a state id, valid while the table's generation is unchanged (the table
  // starts over past kMaxStates; the caller's copy of the state then re-enters it).
  struct Ref {
    int32_t id = 0;
    uint64_t generation = 0;
  };

  GrammarTable(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenIndex> index);

  const Grammar& grammar() const { return *grammar_; }
  const TokenIndex& index() const { return *index_; }
  std::shared_ptr<const Grammar> grammar_ptr() const { return grammar_; }

  void start(Ref& ref, MatchState& state);
  // Advances over all bytes, or returns false leaving ref/state unchanged.
  bool advance(Ref& ref, MatchState& state, std::string_view bytes);
  // The tokens allowed in this state (end tokens iff the grammar can end there).
  std::shared_ptr<const TokenMask> mask(Ref& ref, const MatchState& state);
  // A step hit the matcher's size caps (the grammar is too ambiguous to follow exactly).
  bool overflowed() const { return overflow_.load(); }

 private:
  static constexpr int32_t kUnknown = -1, kDead = -2;
  struct Interned {
    MatchState state;
    std::vector<int32_t> next;  // [256] kUnknown, kDead or a state id
    std::shared_ptr<const TokenMask> mask;
  };
  // All below: with mu_ held.
  void refresh(Ref& ref, const MatchState& state);
  int32_t intern(MatchState state);
  int32_t transition(int32_t id, uint8_t byte);
  void walk(uint32_t node, int32_t state, TokenMask& mask);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenIndex> index_;
  std::atomic<bool> overflow_{false};
  std::mutex mu_;
  uint64_t generation_ = 1;
  std::vector<Interned> states_;
  std::unordered_map<std::string, int32_t> ids_;  // state_key -> id
};

}  // namespace vks::grammar
