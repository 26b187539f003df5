#pragma once
// Lazy grammars (as llama.cpp's): the output is free text until a trigger appears, and from the
// trigger on it must be a sentence of a body rule. Built as plain GBNF, so a lazy grammar is an
// ordinary Grammar to the matcher, the token masks and the engine: the free text is an automaton
// over code points (Knuth-Morris-Pratt over the trigger) that can end anywhere but never contains
// the trigger, and the body takes over exactly where the trigger begins. Requests sharing one
// lazy grammar share its masks (a handful of free-text states), and nothing in the engine knows
// the difference, so the output stays batch-invariant like any constrained request's.
#include <string>
#include <string_view>

namespace vks::grammar {

// How the body is triggered.
struct LazyTrigger {
  // The text the body starts with ("<tool_call>"); with at_start, its first character ("{").
  std::string word;
  // The trigger counts only at the very start of the output, after optional whitespace (Llama
  // 3.1's JSON calls): output that starts otherwise is free text to the end.
  bool at_start = false;
};

// Rules (start rule `root`) for: free text, optionally followed by a sentence of `body_rule`,
// which must itself start with the trigger's word. The caller appends the body's rules; rule
// names starting with "vkslazy" are taken. Throws CompileError for an empty or overlong word.
std::string lazy_gbnf(const LazyTrigger& trigger, std::string_view body_rule);

inline constexpr size_t kMaxTriggerCodepoints = 64;

}  // namespace vks::grammar
