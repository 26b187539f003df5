#pragma once
// Grammar-constrained token selection for one request: which tokens may come next, and advancing
// the grammar by the chosen token. The allowed set of a grammar state is computed by walking the
// vocabulary's byte trie (TokenIndex) only along bytes the state accepts, and cached by state, so
// a state seen before (e.g. inside a JSON string, again and again) costs one hash lookup.
// End-of-generation tokens are allowed exactly where the grammar can end.
#include <cstdint>
#include <memory>
#include <span>
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

  bool can_end() const { return grammar::can_end(state_); }
  // Only an end token is allowed now (the grammar is complete and cannot continue).
  bool must_end() const { return can_end() && state_.size() == 1; }
  // A step hit the matcher's size caps (the grammar is too ambiguous to follow exactly).
  bool overflowed() const { return overflow_; }

 private:
  void compute(TokenMask& mask);
  void walk(uint32_t node, const MatchState& state, TokenMask& mask);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenIndex> index_;
  MatchState state_;
  bool overflow_ = false;
  std::shared_ptr<const TokenMask> current_;
  std::unordered_map<std::string, std::shared_ptr<const TokenMask>> cache_;
};

}  // namespace vks::grammar
