#include "engine/grammar/compile.h"

#include <string>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/json_schema.h"

namespace vks::grammar {

std::shared_ptr<const Grammar> compile_constraint(std::string_view gbnf, std::string_view json_schema) {
  if (!gbnf.empty() && !json_schema.empty()) throw CompileError(0, "grammar, json_schema: give at most one of them");
  if (gbnf.empty() && json_schema.empty()) throw CompileError(0, "grammar: empty");
  const std::string_view field = gbnf.empty() ? "json_schema" : "grammar";
  const std::string_view text = gbnf.empty() ? json_schema : gbnf;
  if (text.size() > kMaxConstraintBytes) {
    throw CompileError(0, std::string(field) + ": longer than " + std::to_string(kMaxConstraintBytes) + " bytes");
  }
  auto g = std::make_shared<Grammar>(gbnf.empty() ? parse_gbnf(json_schema_text_to_gbnf(json_schema)) : parse_gbnf(gbnf));
  bool overflow = false;
  if (initial_state(*g, &overflow).empty() || overflow) {
    throw CompileError(0, std::string(field) + ": the start rule matches nothing (or is too ambiguous to follow)");
  }
  return g;
}

}  // namespace vks::grammar
