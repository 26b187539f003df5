#include "engine/grammar/compile.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/json_schema.h"

namespace vks::grammar {
namespace {

// The parse stacks entering rule `id` opens at once: its alternatives, each as many as the rule it
// starts with opens (a lower bound: a rule that can match nothing lets the next one open too). The
// matcher follows at most kMaxParseStacks; a grammar past that compiled, then failed at its first
// step into the rule, at generation time, as a server error.
size_t opened_stacks(const Grammar& g, uint32_t id, std::vector<size_t>& memo) {
  constexpr size_t kVisiting = static_cast<size_t>(-1);
  if (memo[id] == kVisiting) return 1;  // left recursion: the parser refuses it before this
  if (memo[id] != 0) return memo[id];
  memo[id] = kVisiting;
  size_t n = 0;
  for (const uint32_t start : g.rules[id].alternatives) {
    const Element& first = g.elements[start];
    n += first.kind == ElementKind::kRuleRef ? opened_stacks(g, first.rule, memo) : 1;
    n = std::min(n, kMaxParseStacks + 1);  // past the bound, more says nothing
  }
  memo[id] = std::max<size_t>(n, 1);
  return memo[id];
}

void check_alternatives(const Grammar& g, std::string_view field) {
  std::vector<size_t> memo(g.rules.size(), 0);
  for (uint32_t id = 0; id < g.rules.size(); ++id) {
    if (opened_stacks(g, id, memo) <= kMaxParseStacks) continue;
    const std::string where = field == "json_schema" ? std::string("a pattern, enum or anyOf of the schema")
                                                     : "rule '" + g.rules[id].name + "'";
    throw CompileError(0, std::string(field) + ": " + where + " has more than " + std::to_string(kMaxParseStacks) +
                              " alternatives open at once, more than a constraint can follow");
  }
}

// A schema's grammar is generated: its faults are the schema's, named so (not "grammar", a field
// the client did not send, with lines of a text it never saw).
Grammar parse_schema_grammar(std::string_view json_schema) {
  const std::string gbnf = json_schema_text_to_gbnf(json_schema);  // throws CompileError "json_schema: ..."
  try {
    return parse_gbnf(gbnf);
  } catch (const CompileError& e) {
    std::string detail = e.what();
    if (detail.rfind("grammar: ", 0) == 0) detail.erase(0, 9);
    if (detail.find("left-recursive") == std::string::npos) {
      throw CompileError(0, "json_schema: the schema's grammar cannot be compiled (" + detail + ")");
    }
    throw CompileError(0, "json_schema: the schema cannot be followed: a $ref that reaches itself before any "
                          "character (such as {\"$ref\":\"#\"} or a $ref cycle), or a pattern repeating what can "
                          "match nothing (such as (a*)*), loops without end (in the grammar made of it, " +
                              detail + ")");
  }
}

}  // namespace

std::shared_ptr<const Grammar> compile_constraint(std::string_view gbnf, std::string_view json_schema) {
  if (!gbnf.empty() && !json_schema.empty()) throw CompileError(0, "grammar, json_schema: give at most one of them");
  if (gbnf.empty() && json_schema.empty()) throw CompileError(0, "grammar: empty");
  const std::string_view field = gbnf.empty() ? "json_schema" : "grammar";
  const std::string_view text = gbnf.empty() ? json_schema : gbnf;
  if (text.size() > kMaxConstraintBytes) {
    throw CompileError(0, std::string(field) + ": longer than " + std::to_string(kMaxConstraintBytes) + " bytes");
  }
  auto g = std::make_shared<Grammar>(gbnf.empty() ? parse_schema_grammar(json_schema) : parse_gbnf(gbnf));
  check_alternatives(*g, field);
  bool overflow = false;
  if (initial_state(*g, &overflow).empty() || overflow) {
    throw CompileError(0, std::string(field) + ": the start rule matches nothing (or is too ambiguous to follow)");
  }
  return g;
}

}  // namespace vks::grammar
