#pragma once
// Grammar-constrained token selection for one request: which tokens may come next, and advancing
// the grammar by the chosen token. The allowed set of a grammar state is computed by walking the
// vocabulary's byte trie (TokenIndex) only along bytes the state accepts, and cached by state, so
// a state seen before (e.g. inside a JSON string, again and again) costs one hash lookup.
// End-of-generation tokens are allowed exactly where the grammar can end.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <string>
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

class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenIndex> index);

  // Tokens allowed now. Valid until the next accept().
  const TokenMask& allowed();
  // Sets every disallowed logit to -infinity; returns how many tokens stay allowed (0: dead end).
  size_t apply(std::span<float> logits);
  // Advances by a token; false (state unchanged) when the token is not allowed.
  bool accept(TokenId id);
  // Advances by raw text (e.g. output forced before generation); false (unchanged) if rejected.
  bool accept_bytes(std::string_view bytes);

  bool can_end() const { return grammar::can_end(state()); }
  // Only an end token is allowed now (the grammar is complete and cannot continue).
  bool must_end() const { return can_end() && state().size() == 1; }
  const MatchState& state() const { return states_[static_cast<size_t>(current_)].state; }
  // A step hit the matcher's size caps (the grammar is too ambiguous to follow exactly).
  bool overflowed() const { return overflow_; }

 private:
  // Distinct grammar states met so far, numbered, each with its byte transitions filled in lazily:
  // a trie walk then costs one table lookup per node once its states are known (inside a JSON
  // string, every node at the same depth reaches the same few states).
  static constexpr int32_t kUnknown = -1, kDead = -2;
  struct Interned {
    MatchState state;
    std::vector<int32_t> next;  // [256] kUnknown, kDead or a state id
    std::shared_ptr<const TokenMask> mask;
  };
  int32_t intern(MatchState state);
  int32_t transition(int32_t id, uint8_t byte);
  void compute(TokenMask& mask);
  void walk(uint32_t node, int32_t state, TokenMask& mask);
  void reset_table();

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenIndex> index_;
  std::vector<Interned> states_;
  std::unordered_map<std::string, int32_t> ids_;  // state_key -> id
  int32_t current_ = 0;
  bool overflow_ = false;
};

}  // namespace vks::grammar
