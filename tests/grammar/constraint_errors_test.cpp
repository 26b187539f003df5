// Issue 37: a constraint the client sent is refused at compile time, in the name of the field the
// client sent. A schema whose generated grammar loops ({"$ref":"#"}, $ref cycles, ^((a*)*)*$) was
// reported as `grammar: line 2, ...` (a field and a text the client never sent); a pattern of
// 50,000 alternatives compiled, then failed at generation time (the matcher follows at most
// kMaxParseStacks stacks) as a server error.
#include <gtest/gtest.h>

#include <string>

#include "engine/grammar/compile.h"
#include "engine/grammar/grammar_matcher.h"

namespace vks::grammar {
namespace {

// The CompileError message of compiling `schema` ("" when it compiles).
std::string schema_error(const std::string& schema) {
  try {
    compile_constraint("", schema);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

std::string grammar_error(const std::string& gbnf) {
  try {
    compile_constraint(gbnf, "");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

// aaa|baa|...: n distinct short alternatives (quoted: as GBNF literals).
std::string alternatives(int n, const std::string& quote = "") {
  const std::string letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string out;
  for (int i = 0; i < n; ++i) {
    if (i > 0) out += quote + '|' + quote;
    out += letters[i % 62];
    out += letters[(i / 62) % 62];
    out += letters[(i / 3844) % 62];
  }
  return quote + out + quote;
}

TEST(ConstraintErrors, LoopingSchemasNameTheSchema) {
  for (const std::string schema : {R"({"$ref":"#"})",
                                   R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})",
                                   R"({"type":"string","pattern":"^((a*)*)*$"})"}) {
    const std::string e = schema_error(schema);
    EXPECT_EQ(e.rfind("json_schema: ", 0), 0u) << schema << " -> " << e;
    EXPECT_NE(e.find("loops"), std::string::npos) << e;
  }
}

TEST(ConstraintErrors, TooManyAlternativesAreRefusedAtCompileTime) {
  const std::string many = alternatives(50000);
  const std::string e = schema_error(R"({"type":"string","pattern":"^()" + many + R"()$"})");
  EXPECT_EQ(e.rfind("json_schema: ", 0), 0u) << e.substr(0, 200);
  EXPECT_NE(e.find(std::to_string(kMaxParseStacks) + " alternatives"), std::string::npos) << e.substr(0, 200);
  const std::string g = grammar_error("root ::= \"x\" (" + alternatives(30000, "\"") + ")");
  EXPECT_EQ(g.rfind("grammar: rule '", 0), 0u) << g.substr(0, 200);
  // Alternatives opened through a rule they start with count too (3 rules of 1,000 each).
  const std::string some = alternatives(1000, "\"");
  const std::string nested = "root ::= a | b | c\na ::= " + some + "\nb ::= " + some + "\nc ::= " + some + "\n";
  EXPECT_NE(grammar_error(nested).find("alternatives open at once"), std::string::npos);
  // And what the matcher follows still compiles: the bound is the matcher's, not lower.
  EXPECT_EQ(schema_error(R"({"type":"string","pattern":"^()" + alternatives(2000) + R"()$"})"), "");
  EXPECT_EQ(schema_error(R"({"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"integer"}}})"), "");
}

}  // namespace
}  // namespace vks::grammar
