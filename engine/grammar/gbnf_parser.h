#pragma once
// Parser for llama.cpp's GBNF grammar notation:
//   rule-name ::= alternative | alternative ...      (a rule ends at the end of its line, except
//                                                     inside parentheses or right after ::= or |)
//   "literal" with escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH, [a-z0-9_] and [^...] classes,
//   . (any character), rule references, ( groups ), repetition * + ? {m} {m,} {m,n}, # comments.
// Rule names may use letters, digits, '-' and '_'. The start rule is `root`.
// Errors (vks::grammar::CompileError) give the byte offset and "line L, column C" of the problem:
// syntax errors, undefined or doubly defined rules, a missing root, left recursion (which the
// stack-based matcher could not run), and grammars past the size limits below.
#include <cstdint>
#include <string_view>

#include "engine/grammar/grammar.h"

namespace vks::grammar {

inline constexpr uint32_t kMaxRepetition = 1000;     // largest m or n in {m,n}
inline constexpr size_t kMaxGrammarElements = 1u << 20;
inline constexpr int kMaxGroupNesting = 256;

Grammar parse_gbnf(std::string_view text);

}  // namespace vks::grammar
