// GBNF parsing and matching: the notation's features, error positions, and the grammars from
// llama.cpp's examples (tests/grammar/data).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_matcher.h"

namespace vks::grammar {
namespace {

bool full(const std::string& gbnf, const std::string& text) { return matches_completely(parse_gbnf(gbnf), text); }

// Whether `text` is a prefix of some sentence (the matcher is still alive after it).
bool prefix(const std::string& gbnf, const std::string& text) {
  auto g = std::make_shared<Grammar>(parse_gbnf(gbnf));
  GrammarMatcher m(g);
  return m.accept(text);
}

std::string read_data(const std::string& name) {
  std::ifstream f(std::string(VKS_GRAMMAR_DATA) + "/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

size_t error_offset(const std::string& gbnf, std::string* message = nullptr) {
  try {
    parse_gbnf(gbnf);
  } catch (const CompileError& e) {
    if (message) *message = e.what();
    return e.offset();
  }
  ADD_FAILURE() << "no error for: " << gbnf;
  return std::string::npos;
}

TEST(Gbnf, LiteralsAndAlternatives) {
  const std::string g = R"(root ::= "yes" | "no" | "maybe")";
  EXPECT_TRUE(full(g, "yes"));
  EXPECT_TRUE(full(g, "maybe"));
  EXPECT_FALSE(full(g, "ye"));
  EXPECT_FALSE(full(g, "yess"));
  EXPECT_TRUE(prefix(g, "ma"));
  EXPECT_FALSE(prefix(g, "x"));
}

TEST(Gbnf, RepetitionOperators) {
  EXPECT_TRUE(full(R"(root ::= "a"*)", ""));
  EXPECT_TRUE(full(R"(root ::= "a"*)", "aaaa"));
  EXPECT_FALSE(full(R"(root ::= "a"+)", ""));
  EXPECT_TRUE(full(R"(root ::= "a"+ "b")", "aab"));
  EXPECT_TRUE(full(R"(root ::= "a"? "b")", "b"));
  EXPECT_FALSE(full(R"(root ::= "a"? "b")", "aab"));
  const std::string g = R"(root ::= "x"{2,4})";
  EXPECT_FALSE(full(g, "x"));
  EXPECT_TRUE(full(g, "xx"));
  EXPECT_TRUE(full(g, "xxxx"));
  EXPECT_FALSE(full(g, "xxxxx"));
  EXPECT_TRUE(full(R"(root ::= "ab"{3})", "ababab"));
  EXPECT_FALSE(full(R"(root ::= "ab"{3})", "abab"));
  EXPECT_TRUE(full(R"(root ::= [0-9]{2,})", "12345"));
  EXPECT_FALSE(full(R"(root ::= [0-9]{2,})", "1"));
  EXPECT_TRUE(full(R"(root ::= ("a" | "b"){0,3} "c")", "abc"));
  EXPECT_FALSE(full(R"(root ::= ("a" | "b"){0,3} "c")", "abbac"));
}

TEST(Gbnf, CharClassesEscapesAndAny) {
  const std::string g = R"(root ::= [a-cx] [^0-9] . "\n\t\\\"\x41\u00e9")";
  EXPECT_TRUE(full(g, "b!z\n\t\\\"A\xC3\xA9"));
  EXPECT_FALSE(full(g, "d!z\n\t\\\"A\xC3\xA9"));
  EXPECT_FALSE(full(g, "b5z\n\t\\\"A\xC3\xA9"));
  // Multi-byte characters match byte by byte, so a token may stop inside one.
  const std::string cjk = R"(root ::= [一-鿿]+)";
  EXPECT_TRUE(full(cjk, "\xE4\xB8\xAD\xE6\x96\x87"));       // 中文
  EXPECT_TRUE(prefix(cjk, "\xE4\xB8"));                     // half of 中
  EXPECT_FALSE(prefix(cjk, "\xE3\x81\x82"));                // あ is outside the range
  EXPECT_FALSE(prefix(R"(root ::= .)", "\xC0\x80"));        // overlong: never valid UTF-8
  EXPECT_FALSE(prefix(R"(root ::= [^a])", "\xED\xA0\x80"));  // a surrogate
  EXPECT_TRUE(full(R"(root ::= [^a])", "\xF0\x9F\x98\x81"));
}

TEST(Gbnf, RulesCommentsAndLayout) {
  const std::string g =
      "# a comment\n"
      "root ::= greeting ws name   # trailing comment\n"
      "greeting ::=\n"
      "    \"hello\"\n"
      "  | \"hi\"\n"
      "name ::= (\n"
      "  [A-Z] [a-z]*\n"
      ")\n"
      "ws ::= \" \"+\n";
  EXPECT_TRUE(full(g, "hello  Bob"));
  EXPECT_TRUE(full(g, "hi X"));
  EXPECT_FALSE(full(g, "hi bob"));
}

TEST(Gbnf, ErrorsCarryPositions) {
  std::string msg;
  EXPECT_EQ(error_offset("root ::= \"abc", &msg), 9u);
  EXPECT_NE(msg.find("line 1, column 10"), std::string::npos) << msg;
  EXPECT_EQ(error_offset("root ::= foo\n", &msg), 9u);
  EXPECT_NE(msg.find("undefined rule 'foo'"), std::string::npos) << msg;
  EXPECT_EQ(error_offset("root ::= \"a\"\nx ::= [b-a]\n", &msg), 20u);
  EXPECT_NE(msg.find("line 2, column 8"), std::string::npos) << msg;
  EXPECT_EQ(error_offset("foo ::= \"a\"\n", &msg), 0u);
  EXPECT_NE(msg.find("root"), std::string::npos) << msg;
  EXPECT_EQ(error_offset("root \"a\"\n"), 5u);
  EXPECT_EQ(error_offset("root ::= * \"a\"\n"), 9u);
  EXPECT_EQ(error_offset("root ::= (\"a\" \n"), 15u);
  EXPECT_EQ(error_offset("root ::= \"a\"{3,2}\n"), 12u);
  EXPECT_EQ(error_offset("root ::= \"a\"{2000}\n"), 13u);
  EXPECT_EQ(error_offset("root ::= \"\\q\"\n"), 10u);
  EXPECT_EQ(error_offset("root ::= \"a\" ]\n"), 13u);
  EXPECT_EQ(error_offset("root ::= \"a\"\nroot ::= \"b\"\n"), 13u);
  // Left recursion (direct, indirect, through a nullable repeat) would loop the matcher.
  error_offset("root ::= root \"a\" | \"b\"\n", &msg);
  EXPECT_NE(msg.find("left-recursive"), std::string::npos) << msg;
  EXPECT_NE(error_offset("root ::= a\na ::= b \"x\"\nb ::= \"\" | a\n"), std::string::npos);
  EXPECT_NE(error_offset("root ::= (\"a\"?)*\n"), std::string::npos);
}

TEST(Gbnf, LlamaCppExampleGrammars) {
  const Grammar arithmetic = parse_gbnf(read_data("arithmetic.gbnf"));
  EXPECT_TRUE(matches_completely(arithmetic, "x = 3\n"));
  EXPECT_TRUE(matches_completely(arithmetic, "(a+b)*2 = 7\nc = d\n"));
  EXPECT_FALSE(matches_completely(arithmetic, "x = \n"));

  const Grammar json = parse_gbnf(read_data("json.gbnf"));
  EXPECT_TRUE(matches_completely(json, R"({"a": [1, 2.5e3, "x\n"], "b": {"c": null}})"));
  EXPECT_FALSE(matches_completely(json, R"({"a": [1, 2,]})"));

  const Grammar list = parse_gbnf(read_data("list.gbnf"));
  EXPECT_TRUE(matches_completely(list, "- milk\n- eggs\n"));
  EXPECT_FALSE(matches_completely(list, "- milk\n-eggs\n"));

  const Grammar chess = parse_gbnf(read_data("chess.gbnf"));
  EXPECT_TRUE(matches_completely(chess, "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 O-O\n"));
  EXPECT_FALSE(matches_completely(chess, "1. e4 e5\n2. Zf3 Nc6\n"));

  const Grammar japanese = parse_gbnf(read_data("japanese.gbnf"));
  EXPECT_TRUE(matches_completely(japanese, "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF"));
  EXPECT_FALSE(matches_completely(japanese, "hello"));
}

TEST(Gbnf, AmbiguityIsCappedNotExplosive) {
  // Exponentially many parses: the matcher caps its work instead of hanging.
  const std::string g = "root ::= (a | b)*\na ::= \"x\" | \"x\" \"x\"\nb ::= \"x\"+\n";
  auto grammar = std::make_shared<Grammar>(parse_gbnf(g));
  GrammarMatcher m(grammar);
  for (int i = 0; i < 200; ++i) m.accept("x");
  // Nested bounded repeats of a nullable item: valid, but with exponentially many expansions.
  auto nested = std::make_shared<Grammar>(parse_gbnf("root ::= ((\"a\"{0,1000}){0,1000}){0,1000}\n"));
  GrammarMatcher n(nested);
  for (int i = 0; i < 50; ++i) n.accept("a");
  EXPECT_TRUE(m.overflowed() || n.overflowed());
}

}  // namespace
}  // namespace vks::grammar
