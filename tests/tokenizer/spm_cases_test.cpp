// llama.cpp's SentencePiece tokenizer cases with the Llama 2 vocabulary, one test per string.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/common/test_models.h"

namespace vks {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string text;
  std::vector<TokenId> ids;
};

std::vector<Case> load_cases() {
  const std::string dir = test::model_path("reference/");
  const std::string text = read_file(dir + "llama2-spm-tokenizer-cases.txt");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  for (size_t start = 0;;) {
    const size_t end = text.find(sep, start);
    if (end == std::string::npos) break;
    cases.push_back({text.substr(start, end - start), {}});
    start = end + sep.size();
  }
  std::istringstream ids(read_file(dir + "llama2-spm-tokenizer-cases.ids"));
  std::string line;
  for (size_t i = 0; std::getline(ids, line); ++i) {
    if (i >= cases.size()) break;
    std::istringstream ls(line);
    for (TokenId id; ls >> id;) cases[i].ids.push_back(id);
  }
  return cases;
}

std::string show(const Tokenizer& tok, const std::vector<TokenId>& ids) {
  std::string s;
  for (const TokenId id : ids) s += std::to_string(id) + "'" + std::string(tok.token_text(id)) + "' ";
  return s;
}

class SpmCases : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    file_ = new gguf::GgufFile(gguf::GgufFile::open(test::model_path("llama2-vocab.gguf")));
    tok_ = Tokenizer::from_gguf(*file_).release();
    cases_ = new std::vector<Case>(load_cases());
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete file_;
    delete cases_;
  }
  static gguf::GgufFile* file_;
  static Tokenizer* tok_;
  static std::vector<Case>* cases_;
};
gguf::GgufFile* SpmCases::file_ = nullptr;
Tokenizer* SpmCases::tok_ = nullptr;
std::vector<Case>* SpmCases::cases_ = nullptr;

TEST_P(SpmCases, EncodeMatchesLlamaCpp) {
  ASSERT_EQ(cases_->size(), 46u) << "reference files not found or malformed under " << test::models_dir();
  const Case& c = (*cases_)[static_cast<size_t>(GetParam())];
  const std::vector<TokenId> got = tok_->encode(c.text, /*add_bos=*/false);
  EXPECT_EQ(got, c.ids) << "text: '" << c.text << "'\n  expected: " << show(*tok_, c.ids)
                        << "\n  got:      " << show(*tok_, got);
}

TEST_P(SpmCases, DecodeRoundTrips) {
  ASSERT_EQ(cases_->size(), 46u);
  const Case& c = (*cases_)[static_cast<size_t>(GetParam())];
  EXPECT_EQ(tok_->decode(c.ids), c.text);
  std::vector<TokenId> with_bos = {tok_->bos()};
  with_bos.insert(with_bos.end(), c.ids.begin(), c.ids.end());
  EXPECT_EQ(tok_->decode(with_bos), c.text);
  EXPECT_EQ(tok_->encode(c.text, true), with_bos);
}

INSTANTIATE_TEST_SUITE_P(Llama2, SpmCases, ::testing::Range(0, 46));

TEST(SpmVocab, Llama2SpecialIds) {
  const gguf::GgufFile file = gguf::GgufFile::open(test::model_path("llama2-vocab.gguf"));
  const auto tok = Tokenizer::from_gguf(file);
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  EXPECT_EQ(tok->unk(), 0);
  EXPECT_TRUE(tok->add_bos_default());
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_FALSE(tok->is_eog(1));
  EXPECT_EQ(tok->token_type(1), TokenType::kControl);
  EXPECT_EQ(tok->token_type(0), TokenType::kUnknown);
  EXPECT_EQ(tok->token_type(3 + 0x41), TokenType::kByte);
  EXPECT_EQ(tok->token_bytes(3 + 0x41), "A");
  EXPECT_EQ(tok->token_bytes(1), "");
  EXPECT_EQ(tok->token_bytes(15043), " Hello");
  EXPECT_EQ(tok->token_text(15043), "\xE2\x96\x81Hello");
  EXPECT_EQ(tok->token_bytes(-1), "");
  EXPECT_EQ(tok->token_bytes(32000), "");
  EXPECT_EQ(tok->encode("", true), std::vector<TokenId>{1});
  EXPECT_TRUE(tok->encode("", false).empty());
}

TEST(SpmVocab, ControlTextIsParsedOnlyWhenAsked) {
  const gguf::GgufFile file = gguf::GgufFile::open(test::model_path("llama2-vocab.gguf"));
  const auto tok = Tokenizer::from_gguf(file);
  const std::vector<TokenId> parsed = tok->encode("<s>Hello</s>", false, /*parse_special=*/true);
  // After a special token the next text gets the leading space again.
  EXPECT_EQ(parsed, (std::vector<TokenId>{1, 15043, 2}));
  const std::vector<TokenId> plain = tok->encode("<s>Hello</s>", false, /*parse_special=*/false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(tok->decode(plain), "<s>Hello</s>");
}

TEST(SpmVocab, Stories260KPrompt) {
  const gguf::GgufFile file = gguf::GgufFile::open(test::model_path("stories260K.gguf"));
  const auto tok = Tokenizer::from_gguf(file);
  EXPECT_EQ(tok->vocab_size(), 512);
  // reference/stories260K_greedy_once_upon_a_time_n64.ids: "1 403 407 261 378".
  const std::vector<TokenId> ids = tok->encode("Once upon a time", true);
  EXPECT_EQ(ids, (std::vector<TokenId>{1, 403, 407, 261, 378})) << show(*tok, ids);
  EXPECT_EQ(tok->decode(ids), "Once upon a time");
}

}  // namespace
}  // namespace vks
