// llama.cpp's byte-level BPE tokenizer cases with the Llama 3 (llama-bpe) and Qwen2.5 (qwen2)
// vocabularies, one test per string and vocabulary.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/tokenizer/tokenizer_cases.h"

namespace vks {
namespace {

struct LoadedVocab {
  gguf::GgufFile file;
  std::unique_ptr<Tokenizer> tok;
  std::vector<test::TokenizerCase> cases;
};

// Loaded once per vocabulary for the whole binary (the files hold 128k-152k tokens).
const LoadedVocab& vocab(const std::string& name) {
  static std::map<std::string, std::unique_ptr<LoadedVocab>> loaded;
  auto& slot = loaded[name];
  if (!slot) {
    gguf::GgufFile file = gguf::GgufFile::open(test::model_path(name + "-vocab.gguf"));
    auto tok = Tokenizer::from_gguf(file);
    slot.reset(new LoadedVocab{std::move(file), std::move(tok),
                               test::load_tokenizer_cases(name + "-bpe-tokenizer-cases")});
  }
  return *slot;
}

using CaseParam = std::tuple<std::string, int>;

class BpeCases : public ::testing::TestWithParam<CaseParam> {};

TEST_P(BpeCases, EncodeMatchesLlamaCpp) {
  const auto& [name, index] = GetParam();
  const LoadedVocab& v = vocab(name);
  ASSERT_EQ(v.cases.size(), 46u) << "reference files not found or malformed under " << test::models_dir();
  const test::TokenizerCase& c = v.cases[static_cast<size_t>(index)];
  const std::vector<TokenId> got = v.tok->encode(c.text, /*add_bos=*/false);
  EXPECT_EQ(got, c.ids) << "text: '" << c.text << "'\n  expected: " << test::show_tokens(*v.tok, c.ids)
                        << "\n  got:      " << test::show_tokens(*v.tok, got);
}

TEST_P(BpeCases, DecodeAndStreamingRoundTrip) {
  const auto& [name, index] = GetParam();
  const LoadedVocab& v = vocab(name);
  ASSERT_EQ(v.cases.size(), 46u);
  const test::TokenizerCase& c = v.cases[static_cast<size_t>(index)];
  EXPECT_EQ(v.tok->decode(c.ids), c.text);
  IncrementalDetokenizer detok(*v.tok);
  std::string streamed;
  for (const TokenId id : c.ids) {
    const std::string piece = detok.push(id);
    EXPECT_EQ(utf8_sanitize(piece), piece) << "a pushed piece is not whole UTF-8";
    streamed += piece;
  }
  streamed += detok.flush();
  EXPECT_EQ(streamed, c.text);
  // With BOS (when the vocabulary adds one) the ids are the same after it and decode the same.
  const std::vector<TokenId> with_bos = v.tok->encode(c.text, v.tok->add_bos_default());
  std::vector<TokenId> expected;
  if (v.tok->add_bos_default()) expected.push_back(v.tok->bos());
  expected.insert(expected.end(), c.ids.begin(), c.ids.end());
  EXPECT_EQ(with_bos, expected);
  EXPECT_EQ(v.tok->decode(with_bos), c.text);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, BpeCases,
                         ::testing::Combine(::testing::Values("llama3", "qwen2"), ::testing::Range(0, 46)),
                         [](const ::testing::TestParamInfo<CaseParam>& p) {
                           return std::get<0>(p.param) + "_" + std::to_string(std::get<1>(p.param));
                         });

}  // namespace
}  // namespace vks
