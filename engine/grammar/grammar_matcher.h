#pragma once
// Incremental matching of bytes against a Grammar, stack-based like llama.cpp's grammar sampler:
// the state is the set of parse stacks still alive. Each stack lists the positions still to be
// matched (top = back); its top is always a char set, and an empty stack means the grammar may
// end here. Bytes are matched one at a time; a multi-byte UTF-8 character is carried as a partial
// code point on the stack's top until it is complete, so a token may end inside a character.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar.h"

namespace vks::grammar {

struct ParseStack {
  std::vector<uint32_t> frames;  // positions in Grammar::elements
  uint32_t partial = 0;          // 0, or (length << 28) | (remaining << 24) | code point bits so far
  bool operator==(const ParseStack& o) const { return partial == o.partial && frames == o.frames; }
  bool operator<(const ParseStack& o) const {
    return partial != o.partial ? partial < o.partial : frames < o.frames;
  }
};

// Sorted, without duplicates. Empty = dead (nothing more can match).
using MatchState = std::vector<ParseStack>;

// Caps that keep a hostile grammar from eating time or memory: past them a step fails (the byte
// is treated as not allowed and GrammarMatcher::overflowed() turns true).
inline constexpr size_t kMaxParseStacks = 2048;
inline constexpr size_t kMaxStackDepth = 4096;
inline constexpr size_t kMaxExpansionsPerStep = 200000;

// The state before any input.
MatchState initial_state(const Grammar& g, bool* overflow = nullptr);
// The state after one more byte; empty when the byte is not allowed.
MatchState step(const Grammar& g, const MatchState& state, uint8_t byte, bool* overflow = nullptr);
// Whether the input so far is a complete sentence of the grammar.
bool can_end(const MatchState& state);
// A compact byte string identifying the state (for caches).
std::string state_key(const MatchState& state);

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  // Advances over all bytes, or leaves the state unchanged and returns false if any is rejected.
  bool accept(std::string_view bytes);
  bool can_end() const { return grammar::can_end(state_); }
  bool dead() const { return state_.empty(); }
  bool overflowed() const { return overflow_; }
  const MatchState& state() const { return state_; }
  const Grammar& grammar() const { return *grammar_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  MatchState state_;
  bool overflow_ = false;
};

// Convenience for tests and validation: whether the whole text is a sentence of the grammar.
bool matches_completely(const Grammar& g, std::string_view text);

}  // namespace vks::grammar
