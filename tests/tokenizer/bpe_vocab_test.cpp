// Byte-level BPE vocabulary details: special ids and end-of-generation sets of the Llama 3 and
// Qwen2.5 vocabularies, special-token parsing, BOS defaults, and clear errors for bad files.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/common/test_models.h"
#include "tests/tokenizer/gguf_bytes.h"

namespace vks {
namespace {

class BpeVocab : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    llama3_file_ = new gguf::GgufFile(gguf::GgufFile::open(test::model_path("llama3-vocab.gguf")));
    llama3_ = Tokenizer::from_gguf(*llama3_file_).release();
    qwen2_file_ = new gguf::GgufFile(gguf::GgufFile::open(test::model_path("qwen2-vocab.gguf")));
    qwen2_ = Tokenizer::from_gguf(*qwen2_file_).release();
  }
  static void TearDownTestSuite() {
    delete llama3_;
    delete llama3_file_;
    delete qwen2_;
    delete qwen2_file_;
  }
  static TokenId id_of(const Tokenizer* tok, const std::string& text) {
    return dynamic_cast<const BpeTokenizer&>(*tok).vocab().find(text);
  }
  static gguf::GgufFile* llama3_file_;
  static Tokenizer* llama3_;
  static gguf::GgufFile* qwen2_file_;
  static Tokenizer* qwen2_;
};
gguf::GgufFile* BpeVocab::llama3_file_ = nullptr;
Tokenizer* BpeVocab::llama3_ = nullptr;
gguf::GgufFile* BpeVocab::qwen2_file_ = nullptr;
Tokenizer* BpeVocab::qwen2_ = nullptr;

TEST_F(BpeVocab, Llama3SpecialIdsAndEndOfGeneration) {
  EXPECT_EQ(llama3_->vocab_size(), 128256);
  EXPECT_EQ(llama3_->bos(), 128000);
  EXPECT_EQ(llama3_->eos(), 128001);
  EXPECT_EQ(llama3_->unk(), -1);
  EXPECT_TRUE(llama3_->add_bos_default());  // no add_bos_token key: llama.cpp's llama-bpe default
  EXPECT_TRUE(dynamic_cast<const BpeTokenizer&>(*llama3_).ignore_merges());
  const TokenId eot = id_of(llama3_, "<|eot_id|>");
  ASSERT_EQ(eot, 128009);
  const auto& v = dynamic_cast<const BpeTokenizer&>(*llama3_).vocab();
  EXPECT_EQ(v.eot, eot);
  EXPECT_EQ(v.eom, -1);  // Llama 3.0's vocabulary has no <|eom_id|> (3.1 added it)
  const std::vector<TokenId> expected = {128001, eot};
  EXPECT_EQ(v.end_of_generation_ids(), expected);
  for (const TokenId id : expected) EXPECT_TRUE(llama3_->is_eog(id)) << id;
  EXPECT_FALSE(llama3_->is_eog(128000));
  EXPECT_FALSE(llama3_->is_eog(id_of(llama3_, "<|start_header_id|>")));
}

TEST_F(BpeVocab, Qwen2SpecialIdsAndEndOfGeneration) {
  EXPECT_EQ(qwen2_->vocab_size(), 151936);
  EXPECT_EQ(qwen2_->bos(), 151643);
  EXPECT_EQ(qwen2_->eos(), 151645);
  EXPECT_FALSE(qwen2_->add_bos_default());  // add_bos_token = false
  EXPECT_EQ(id_of(qwen2_, "<|im_end|>"), 151645);
  // <|im_end|> (EOS and EOT) and <|endoftext|> both end generation, as in llama.cpp.
  const auto& v = dynamic_cast<const BpeTokenizer&>(*qwen2_).vocab();
  EXPECT_EQ(v.end_of_generation_ids(), (std::vector<TokenId>{151643, 151645}));
  EXPECT_FALSE(qwen2_->is_eog(id_of(qwen2_, "<|im_start|>")));
}

TEST_F(BpeVocab, ControlTokensParsedOnlyWhenAsked) {
  const std::string text = "<|im_start|>user\nHi<|im_end|>";
  const TokenId start = id_of(qwen2_, "<|im_start|>");
  const std::vector<TokenId> parsed = qwen2_->encode(text, false, /*parse_special=*/true);
  ASSERT_GE(parsed.size(), 3u);
  EXPECT_EQ(parsed.front(), start);
  EXPECT_EQ(parsed.back(), 151645);
  EXPECT_EQ(qwen2_->decode(parsed), "user\nHi");  // control tokens print nothing
  const std::vector<TokenId> plain = qwen2_->encode(text, false, /*parse_special=*/false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), start), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 151645), 0);
  EXPECT_EQ(qwen2_->decode(plain), text);
}

TEST_F(BpeVocab, UserDefinedTokensAlwaysSplitOutAndPrintTheirText) {
  const TokenId call = id_of(qwen2_, "<tool_call>");
  ASSERT_GE(call, 0);
  EXPECT_EQ(qwen2_->token_type(call), TokenType::kUserDefined);
  const std::vector<TokenId> ids = qwen2_->encode("a<tool_call>b", false, /*parse_special=*/false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), call), 1);
  EXPECT_EQ(qwen2_->decode(ids), "a<tool_call>b");
}

TEST_F(BpeVocab, BosAndEmptyInput) {
  EXPECT_EQ(llama3_->encode("", true), std::vector<TokenId>{128000});
  EXPECT_TRUE(llama3_->encode("", false).empty());
  const std::vector<TokenId> ids = llama3_->encode("Hello", true);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], 128000);
  EXPECT_EQ(llama3_->token_bytes(ids[1]), "Hello");
  EXPECT_EQ(llama3_->token_bytes(128000), "");  // control
  EXPECT_EQ(llama3_->token_bytes(-1), "");
  EXPECT_EQ(llama3_->token_bytes(128256), "");
}

TEST_F(BpeVocab, InvalidUtf8EncodesLikeReplacementCharacters) {
  // llama.cpp reads each byte that does not start a well-formed sequence as U+FFFD.
  EXPECT_EQ(llama3_->encode("a\xFF\xC3" "b", false), llama3_->encode("a\xEF\xBF\xBD\xEF\xBF\xBD" "b", false));
  EXPECT_EQ(qwen2_->decode(qwen2_->encode("x\x80y", false)), "x\xEF\xBF\xBDy");
}

TEST_F(BpeVocab, StreamingNeverSplitsACharacter) {
  const std::string text = "日本語のテキスト 🦙🦙 ÅÄÖ";
  for (const Tokenizer* tok : {llama3_, qwen2_}) {
    const std::vector<TokenId> ids = tok->encode(text, false);
    IncrementalDetokenizer detok(*tok);
    std::string streamed;
    for (const TokenId id : ids) {
      const std::string piece = detok.push(id);
      EXPECT_EQ(utf8_sanitize(piece), piece);
      streamed += piece;
    }
    EXPECT_EQ(streamed + detok.flush(), text);
  }
}

std::vector<uint8_t> tiny_bpe(const std::string& pre, bool with_merges) {
  test::GgufBytes g;
  g.str("tokenizer.ggml.model", "gpt2");
  if (!pre.empty()) g.str("tokenizer.ggml.pre", pre);
  g.strings("tokenizer.ggml.tokens", {"a", "b", "ab", "\xC4\xA0", "\xC4\xA0" "ab", "<|end|>"});
  g.ints("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 3});
  if (with_merges) g.strings("tokenizer.ggml.merges", {"a b", "\xC4\xA0 ab"});
  return g.bytes();
}

TEST(BpeLoad, UnknownPreTokenizerIsRefusedByName) {
  const std::vector<uint8_t> bytes = tiny_bpe("no-such-pre", true);
  const gguf::GgufFile file = gguf::GgufFile::parse(bytes);
  try {
    (void)Tokenizer::from_gguf(file);
    FAIL() << "an unknown pre-tokenizer was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("'no-such-pre'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("llama-bpe"), std::string::npos) << e.what();
  }
}

TEST(BpeLoad, MissingMergesIsCorrupt) {
  const std::vector<uint8_t> bytes = tiny_bpe("gpt-2", false);
  const gguf::GgufFile file = gguf::GgufFile::parse(bytes);
  try {
    (void)Tokenizer::from_gguf(file);
    FAIL() << "a BPE vocabulary without merges was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("merges"), std::string::npos) << e.what();
  }
}

TEST(BpeLoad, EveryPreTokenizerMergesATinyVocabulary) {
  for (const std::string pre : {"", "default", "gpt-2", "llama-bpe", "qwen2", "smollm", "tekken"}) {
    const std::vector<uint8_t> bytes = tiny_bpe(pre, true);
    const gguf::GgufFile file = gguf::GgufFile::parse(bytes);
    const auto tok = Tokenizer::from_gguf(file);
    EXPECT_EQ(tok->encode("ab ab", false), (std::vector<TokenId>{2, 4})) << "pre '" << pre << "'";
    EXPECT_EQ(tok->encode("ab<|end|>", false, true), (std::vector<TokenId>{2, 5})) << "pre '" << pre << "'";
    EXPECT_TRUE(tok->is_eog(5));  // <|end|> ends generation by its text
    EXPECT_EQ(tok->bos(), -1);    // llama.cpp's BPE default 11 does not fit: none
    EXPECT_EQ(tok->add_bos_default(), pre == "llama-bpe" || pre == "tekken") << "pre '" << pre << "'";
  }
}

}  // namespace
}  // namespace vks
