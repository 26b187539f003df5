#pragma once
// A context-free grammar over Unicode code points, compiled from llama.cpp's GBNF notation
// (gbnf_parser.h) and matched incrementally byte by byte (grammar_matcher.h).
//
// Layout (flat, so a position is one integer): every alternative of every rule is a run of
// elements in `elements` closed by a kEnd element. A rule is the list of its alternatives' start
// positions. Repetitions and groups are desugared into generated rules by the parser, as in
// llama.cpp, so the matcher only knows char sets and rule references.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/common/error.h"

namespace vks::grammar {

enum class ElementKind : uint8_t { kEnd, kRuleRef, kCharSet };

struct Element {
  ElementKind kind = ElementKind::kEnd;
  bool negated = false;     // kCharSet: matches code points NOT in the ranges
  uint32_t rule = 0;        // kRuleRef: the rule id
  uint32_t ranges_begin = 0, ranges_end = 0;  // kCharSet: [begin, end) into Grammar::ranges
};

struct CodepointRange {
  uint32_t first = 0, last = 0;  // inclusive
};

struct Rule {
  std::string name;
  std::vector<uint32_t> alternatives;  // start positions in Grammar::elements
};

struct Grammar {
  std::vector<Element> elements;
  std::vector<CodepointRange> ranges;  // per char set: sorted, disjoint, non-adjacent
  std::vector<Rule> rules;
  uint32_t root = 0;

  // Whether the char set at `pos` matches code point cp.
  bool matches(uint32_t pos, uint32_t cp) const;
  // Whether the char set at `pos` matches some code point in [lo, hi] (for partial UTF-8).
  bool matches_any(uint32_t pos, uint32_t lo, uint32_t hi) const;
};

// A grammar or schema that cannot be compiled. offset: byte offset into the source text
// (for JSON Schema: into the schema's JSON text when it was given as text, else 0); the message
// already names line and column (or the schema path).
class CompileError : public Error {
 public:
  CompileError(size_t offset, const std::string& message)
      : Error(ErrorCode::kInvalidArgument, message), offset_(offset) {}
  size_t offset() const noexcept { return offset_; }

 private:
  size_t offset_;
};

}  // namespace vks::grammar
