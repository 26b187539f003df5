#pragma once
// Grammar-constrained token selection for one request: which tokens may come next, and advancing
// the grammar by the chosen token. The states and masks live in a GrammarTable, which requests
// with the same grammar share. End-of-generation tokens are allowed exactly where the grammar can
// end.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "engine/grammar/grammar_table.h"

namespace vks::grammar {

class TokenConstraint {
 public:
  explicit TokenConstraint(std::shared_ptr<GrammarTable> table);
  // A private table.
  TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenIndex> index);

  // Tokens allowed now. Valid until the next accept().
  const TokenMask& allowed();
  // Sets every disallowed logit to -infinity; returns how many tokens stay allowed (0: dead end).
  size_t apply(std::span<float> logits);
  // Advances by a token; false (state unchanged) when the token is not allowed.
  bool accept(TokenId id);
  // Advances by raw text (e.g. output forced before generation); false (unchanged) if rejected.
  bool accept_bytes(std::string_view bytes);

  bool can_end() const { return grammar::can_end(state_); }
  // Only an end token is allowed now (the grammar is complete and cannot continue).
  bool must_end() const { return can_end() && state_.size() == 1; }
  const MatchState& state() const { return state_; }
  // A step hit the matcher's size caps (the grammar is too ambiguous to follow exactly).
  bool overflowed() const { return table_->overflowed(); }

 private:
  std::shared_ptr<GrammarTable> table_;
  GrammarTable::Ref ref_;
  MatchState state_;
  std::shared_ptr<const TokenMask> mask_;  // of state_, once asked for
};

}  // namespace vks::grammar
