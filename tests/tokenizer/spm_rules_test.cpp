// The SentencePiece rules on small hand-made vocabularies: score order, leftmost ties, byte
// fallback, unknown characters, user-defined tokens, and the errors for bad tokenizer keys.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/tokenizer/gguf_bytes.h"

namespace vks {
namespace {

const std::string kSp = "\xE2\x96\x81";  // U+2581

struct Entry {
  std::string text;
  float score;
  int32_t type;
};

// <unk>, <s>, </s>, then `entries`; with_bytes adds <0x00>..<0xFF> after them.
test::GgufBytes make_vocab(const std::vector<Entry>& entries, bool with_bytes) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (const Entry& e : entries) {
    tokens.push_back(e.text);
    scores.push_back(e.score);
    types.push_back(e.type);
  }
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      tokens.push_back(name);
      scores.push_back(0);
      types.push_back(6);
    }
  }
  test::GgufBytes g;
  g.str("tokenizer.ggml.model", "llama").strings("tokenizer.ggml.tokens", tokens);
  g.floats("tokenizer.ggml.scores", scores).ints("tokenizer.ggml.token_type", types);
  return g;
}

struct Loaded {
  std::vector<uint8_t> bytes;
  std::unique_ptr<gguf::GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

std::unique_ptr<Loaded> load(const test::GgufBytes& g) {
  auto l = std::make_unique<Loaded>();
  l->bytes = g.bytes();
  l->file = std::make_unique<gguf::GgufFile>(gguf::GgufFile::parse(l->bytes));
  l->tok = Tokenizer::from_gguf(*l->file);
  return l;
}

ErrorCode load_error(const test::GgufBytes& g) {
  try {
    load(g);
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;  // no error: the caller's expectation fails
}

// Ids 3.. are the entries in order.
TEST(SpmRules, HigherScoreMergesFirst) {
  const auto l = load(make_vocab({{kSp, 0, 1}, {"a", 0, 1}, {kSp + "a", -5, 1}, {"aa", -1, 1}}, false));
  // "▁aa": (a,a) scores -1 and beats (▁,a) at -5, leaving ▁ alone.
  EXPECT_EQ(l->tok->encode("aa", false), (std::vector<TokenId>{3, 6}));
}

TEST(SpmRules, EqualScoresMergeLeftmostFirst) {
  const auto l = load(make_vocab({{kSp, 0, 1}, {"a", 0, 1}, {"aa", -1, 1}}, false));
  // "▁aaa": the pairs a1a2 and a2a3 tie; the left one wins.
  EXPECT_EQ(l->tok->encode("aaa", false), (std::vector<TokenId>{3, 5, 4}));
}

TEST(SpmRules, ByteFallbackAndUnknown) {
  const auto with_bytes = load(make_vocab({{kSp, 0, 1}}, true));
  // 'é' = C3 A9 has no token: its bytes. Byte tokens start after the one entry, at id 4.
  EXPECT_EQ(with_bytes->tok->encode("\xC3\xA9", false), (std::vector<TokenId>{3, 4 + 0xC3, 4 + 0xA9}));
  EXPECT_EQ(with_bytes->tok->decode(std::vector<TokenId>{3, 4 + 0xC3, 4 + 0xA9}), "\xC3\xA9");
  const auto no_bytes = load(make_vocab({{kSp, 0, 1}}, false));
  EXPECT_EQ(no_bytes->tok->encode("\xC3\xA9", false), (std::vector<TokenId>{3, 0, 0}));
}

TEST(SpmRules, UserDefinedTokensAreAlwaysSplitOut) {
  const auto l = load(make_vocab({{kSp, 0, 1}, {"a", 0, 1}, {"b", 0, 1}, {kSp + "a", -1, 1},
                                  {kSp + "b", -1, 1}, {"<|x|>", 0, 4}},
                                 false));
  // The text after a user-defined token gets the leading space again, as llama.cpp does.
  EXPECT_EQ(l->tok->encode("a<|x|>b", false), (std::vector<TokenId>{6, 8, 7}));
  EXPECT_EQ(l->tok->encode("<|x|><|x|>", false), (std::vector<TokenId>{8, 8}));
  EXPECT_EQ(l->tok->decode(std::vector<TokenId>{6, 8, 7}), "a<|x|> b");
}

TEST(SpmRules, SpacePrefixCanBeDisabled) {
  auto g = make_vocab({{kSp, 0, 1}, {"a", 0, 1}}, false);
  g.boolean("tokenizer.ggml.add_space_prefix", false).boolean("tokenizer.ggml.add_bos_token", false);
  const auto l = load(g);
  EXPECT_EQ(l->tok->encode("a a", false), (std::vector<TokenId>{4, 3, 4}));
  EXPECT_FALSE(l->tok->add_bos_default());
  EXPECT_EQ(l->tok->decode(std::vector<TokenId>{3, 4}), " a");
}

TEST(SpmRules, SpecialIdsFromKeys) {
  auto g = make_vocab({{kSp, 0, 1}, {"<eot>", 0, 3}}, false);
  g.u32("tokenizer.ggml.eos_token_id", 1).u32("tokenizer.ggml.bos_token_id", 2);
  g.u32("tokenizer.ggml.eot_token_id", 4).u32("tokenizer.ggml.unknown_token_id", 99999);
  const auto l = load(g);
  EXPECT_EQ(l->tok->eos(), 1);
  EXPECT_EQ(l->tok->bos(), 2);
  EXPECT_EQ(l->tok->unk(), 0);  // out of range: llama.cpp keeps the default
  EXPECT_TRUE(l->tok->is_eog(4));
  EXPECT_TRUE(l->tok->is_eog(1));
  EXPECT_FALSE(l->tok->is_eog(2));
}

TEST(SpmRules, BadKeysAreErrors) {
  test::GgufBytes gpt2;
  gpt2.str("tokenizer.ggml.model", "gpt2").strings("tokenizer.ggml.tokens", {"a"});
  EXPECT_EQ(load_error(gpt2), ErrorCode::kCorrupt);  // BPE is supported, but needs tokenizer.ggml.merges

  test::GgufBytes unknown_model;
  unknown_model.str("tokenizer.ggml.model", "wordpiece-9").strings("tokenizer.ggml.tokens", {"a"});
  EXPECT_EQ(load_error(unknown_model), ErrorCode::kUnsupported);

  test::GgufBytes no_model;
  no_model.strings("tokenizer.ggml.tokens", {"a"});
  EXPECT_EQ(load_error(no_model), ErrorCode::kCorrupt);

  test::GgufBytes no_tokens;
  no_tokens.str("tokenizer.ggml.model", "llama");
  EXPECT_EQ(load_error(no_tokens), ErrorCode::kCorrupt);

  test::GgufBytes short_scores;
  short_scores.str("tokenizer.ggml.model", "llama").strings("tokenizer.ggml.tokens", {"a", "b"});
  short_scores.floats("tokenizer.ggml.scores", {1.0f});
  EXPECT_EQ(load_error(short_scores), ErrorCode::kCorrupt);

  test::GgufBytes nan_score;
  nan_score.str("tokenizer.ggml.model", "llama").strings("tokenizer.ggml.tokens", {"a", "b"});
  nan_score.floats("tokenizer.ggml.scores", {1.0f, std::nanf("")});
  EXPECT_EQ(load_error(nan_score), ErrorCode::kCorrupt);

  test::GgufBytes bad_type;
  bad_type.str("tokenizer.ggml.model", "llama").strings("tokenizer.ggml.tokens", {"a", "b"});
  bad_type.ints("tokenizer.ggml.token_type", {1, 9});
  EXPECT_EQ(load_error(bad_type), ErrorCode::kCorrupt);

  test::GgufBytes wrong_kind;
  wrong_kind.str("tokenizer.ggml.model", "llama").str("tokenizer.ggml.tokens", "not an array");
  EXPECT_EQ(load_error(wrong_kind), ErrorCode::kCorrupt);
}

}  // namespace
}  // namespace vks
