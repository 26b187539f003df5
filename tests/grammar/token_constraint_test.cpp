// Token masks: the trie walk must allow exactly the tokens a brute-force check over the whole
// vocabulary allows, on a hand-made vocabulary and on the real 32k llama2 vocabulary.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/token_constraint.h"
#include "tests/common/test_models.h"

namespace vks::grammar {
namespace {

std::string read_data(const std::string& name) {
  std::ifstream f(std::string(VKS_GRAMMAR_DATA) + "/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Brute force: the token is allowed iff the matcher accepts all its bytes (end tokens: iff the
// grammar can end).
std::vector<bool> brute_force(const std::shared_ptr<const Grammar>& g, const MatchState& state, const TokenIndex& index) {
  std::vector<bool> out(static_cast<size_t>(index.vocab_size()));
  for (TokenId id = 0; id < index.vocab_size(); ++id) {
    if (index.is_end(id)) {
      out[static_cast<size_t>(id)] = can_end(state);
      continue;
    }
    const std::string& bytes = index.bytes(id);
    if (bytes.empty()) continue;
    MatchState s = state;
    for (char c : bytes) {
      s = step(*g, s, static_cast<uint8_t>(c));
      if (s.empty()) break;
    }
    out[static_cast<size_t>(id)] = !s.empty();
  }
  return out;
}

// Random walk through the grammar: at every step the mask equals brute force; then a random
// allowed token is accepted. Returns the generated text; `ended` tells whether it ended.
std::string random_walk(const std::shared_ptr<const Grammar>& g, const std::shared_ptr<const TokenIndex>& index,
                        uint32_t seed, int steps, bool* ended, std::shared_ptr<GrammarTable> shared = nullptr) {
  TokenConstraint c(shared ? shared : std::make_shared<GrammarTable>(g, index));
  MatchState shadow = initial_state(*g);
  std::mt19937 rng(seed);
  std::string text;
  *ended = false;
  for (int i = 0; i < steps; ++i) {
    const TokenMask& mask = c.allowed();
    const std::vector<bool> expected = brute_force(g, shadow, *index);
    std::vector<TokenId> allowed;
    for (TokenId id = 0; id < index->vocab_size(); ++id) {
      EXPECT_EQ(mask_has(mask, id), expected[static_cast<size_t>(id)]) << "token " << id << " step " << i;
      if (expected[static_cast<size_t>(id)]) allowed.push_back(id);
    }
    if (allowed.empty()) break;
    const TokenId pick = allowed[rng() % allowed.size()];
    EXPECT_TRUE(c.accept(pick));
    if (index->is_end(pick)) {
      *ended = true;
      break;
    }
    for (char ch : index->bytes(pick)) shadow = step(*g, shadow, static_cast<uint8_t>(ch));
    text += index->bytes(pick);
  }
  return text;
}

TEST(TokenConstraint, SmallVocabularyMatchesBruteForce) {
  const std::vector<std::string> vocab = {"</s>", "a", "b", "ab", "abc", "\"", "{", "}", "{\"", "\":",
                                          "1",    "12", " ", "\xE4\xB8", "\xAD", "\xE4\xB8\xAD", "x\"}", ""};
  auto index = std::make_shared<TokenIndex>(vocab, std::vector<TokenId>{0});
  auto g = std::make_shared<Grammar>(parse_gbnf(
      "root ::= \"{\" ( \"\\\"\" [a-c\\u4e2d]* \"\\\":\" \" \"? [0-9]+ )? \"}\"\n"));
  for (uint32_t seed = 0; seed < 50; ++seed) {
    bool ended = false;
    const std::string text = random_walk(g, index, seed, 30, &ended);
    if (ended) {
      EXPECT_TRUE(matches_completely(*g, text)) << text;
    }
  }
  // Never allowed: the empty token, and a token that does not fit.
  TokenConstraint c(g, index);
  EXPECT_FALSE(c.accept(17));
  EXPECT_FALSE(c.accept(1));
  EXPECT_FALSE(c.accept(0));  // cannot end before "{...}"
  EXPECT_TRUE(c.accept(8));   // {"
  EXPECT_TRUE(c.accept(13));  // first half of 中
  EXPECT_FALSE(c.accept(13));
  EXPECT_TRUE(c.accept(14));  // its last byte
}

TEST(TokenConstraint, RequestsSharingATableFromThreadsMatchBruteForce) {
  const std::vector<std::string> vocab = {"</s>", "[", "]", ",", " ", "1", "2", "12", "-", "[1", "1,", ", ", "0", "]]"};
  auto index = std::make_shared<TokenIndex>(vocab, std::vector<TokenId>{0});
  auto g = std::make_shared<Grammar>(parse_gbnf("root ::= list\nlist ::= \"[\" (item (\", \"? item)*)? \"]\"\n"
                                                "item ::= \"-\"? [0-2]+ | list\n"));
  auto table = std::make_shared<GrammarTable>(g, index);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t seed = 0; seed < 10; ++seed) {
        bool ended = false;
        const std::string text = random_walk(g, index, t * 100 + seed, 25, &ended, table);
        if (ended) {
          EXPECT_TRUE(matches_completely(*g, text)) << text;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
}

TEST(TokenConstraint, Llama2VocabularyJsonGrammarMatchesBruteForce) {
  const auto file = gguf::GgufFile::open(test::model_path("llama2-vocab.gguf"));
  const auto tok = Tokenizer::from_gguf(file);
  auto index = std::make_shared<TokenIndex>(*tok);
  ASSERT_EQ(index->vocab_size(), 32000);
  auto g = std::make_shared<Grammar>(parse_gbnf(read_data("json.gbnf")));
  for (uint32_t seed = 0; seed < 3; ++seed) {
    bool ended = false;
    random_walk(g, index, seed, 12, &ended);
  }
  auto schema = std::make_shared<Grammar>(parse_gbnf(json_schema_text_to_gbnf(
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":5},"n":{"type":"integer","minimum":3,"maximum":250}},"required":["name","n"]})")));
  bool ended = false;
  random_walk(schema, index, 42, 16, &ended);
}

TEST(TokenConstraint, EndTokensOnlyWhereTheGrammarCanEnd) {
  const std::vector<std::string> vocab = {"</s>", "a", "b"};
  auto index = std::make_shared<TokenIndex>(vocab, std::vector<TokenId>{0});
  auto g = std::make_shared<Grammar>(parse_gbnf("root ::= \"a\" \"b\"?\n"));
  TokenConstraint c(g, index);
  EXPECT_FALSE(mask_has(c.allowed(), 0));
  EXPECT_TRUE(mask_has(c.allowed(), 1));
  ASSERT_TRUE(c.accept(1));
  EXPECT_TRUE(mask_has(c.allowed(), 0));
  EXPECT_TRUE(mask_has(c.allowed(), 2));
  EXPECT_FALSE(c.must_end());
  ASSERT_TRUE(c.accept(2));
  EXPECT_TRUE(c.must_end());
  std::vector<float> logits = {1, 2, 3};
  EXPECT_EQ(c.apply(logits), 1u);
  EXPECT_EQ(logits[0], 1.0f);
  EXPECT_TRUE(std::isinf(logits[1]) && logits[1] < 0);
}

}  // namespace
}  // namespace vks::grammar
