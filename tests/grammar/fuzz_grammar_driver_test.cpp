// Drives the grammar fuzz target with random and mutated inputs so it runs without clang.
// GCC 12 reports a false -Wrestrict on std::string concatenation at -O3 (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wrestrict
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_pattern.h"
#include "engine/grammar/json_schema.h"

namespace {

int run(const std::string& input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string read_data(const std::string& name) {
  std::ifstream f(std::string(VKS_GRAMMAR_DATA) + "/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> seeds() {
  std::vector<std::string> s;
  for (const char* f : {"arithmetic.gbnf", "json.gbnf", "list.gbnf", "chess.gbnf", "japanese.gbnf"}) {
    s.push_back(std::string(1, '\0') + read_data(f));
  }
  s.push_back(std::string(1, '\0') + "root ::= (\"a\" | [b-d]{2,5} x?)* \"\\u00e9\"\nx ::= . [^\\n]+ # c\n");
  for (const char* schema :
       {R"({"type":"object","properties":{"a":{"type":"integer","minimum":-17,"maximum":243},"b":{"type":"array","items":{"type":"string","maxLength":3},"minItems":1,"maxItems":4}},"required":["a"]})",
        R"({"anyOf":[{"type":"number","exclusiveMinimum":0.5},{"enum":[1,"x",null]},{"const":{"k":[true]}}]})",
        R"({"$defs":{"t":{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/$defs/t"}}}}},"$ref":"#/$defs/t"})",
        R"({"type":"string","pattern":"^(ab|[c-e]\\d{2,3})+x?$"})", R"({"type":["string","null"],"minLength":2})"}) {
    s.push_back(std::string(1, '\1') + schema);
  }
  s.push_back(std::string(1, '\2') + "^[A-Z][a-z]*(-\\w{1,3})?\\.?$");
  return s;
}

// The mutations only explore the parsers' depths if the seeds are valid inputs: every seed must
// load and compile (a missing data file or a seed the parsers reject would silently weaken the test).
TEST(GrammarFuzz, SeedsAreValidInputs) {
  for (const std::string& seed : seeds()) {
    ASSERT_GT(seed.size(), 1u);
    const std::string text = seed.substr(1);
    switch (seed[0]) {
      case '\0': EXPECT_NO_THROW((void)vks::grammar::parse_gbnf(text)) << text.substr(0, 80); break;
      case '\1':
        EXPECT_NO_THROW((void)vks::grammar::parse_gbnf(vks::grammar::json_schema_text_to_gbnf(text))) << text;
        break;
      default: EXPECT_NO_THROW((void)vks::grammar::json_pattern_to_gbnf(text)) << text; break;
    }
  }
}

TEST(GrammarFuzz, RandomBytes) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 120);
  for (int i = 0; i < 20000; ++i) {
    std::string input;
    const int n = length(rng);
    for (int k = 0; k < n; ++k) input.push_back(static_cast<char>(byte(rng)));
    ASSERT_EQ(run(input), 0);
  }
}

TEST(GrammarFuzz, MutatedSeeds) {
  const std::vector<std::string> base = seeds();
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> byte(0, 255);
  const std::string syntax = "()[]{}|*+?.^-\\\"':,#\n 0123456789";
  for (int i = 0; i < 6000; ++i) {
    std::string input = base[static_cast<size_t>(i) % base.size()];
    const int edits = 1 + byte(rng) % 6;
    for (int e = 0; e < edits && input.size() > 2; ++e) {
      const size_t pos = 1 + static_cast<size_t>(rng()) % (input.size() - 1);
      switch (byte(rng) % 5) {
        case 0: input[pos] = static_cast<char>(byte(rng)); break;
        case 1: input.erase(pos, 1 + static_cast<size_t>(byte(rng) % 4)); break;
        case 2: input.insert(pos, 1, syntax[static_cast<size_t>(byte(rng)) % syntax.size()]); break;
        case 3: input.insert(pos, input.substr(pos, 6)); break;
        default: input[pos] = syntax[static_cast<size_t>(byte(rng)) % syntax.size()]; break;
      }
    }
    ASSERT_EQ(run(input), 0);
  }
}

}  // namespace
