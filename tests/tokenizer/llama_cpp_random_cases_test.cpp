// 1000 random mixed-script strings per vocabulary, tokenized by llama.cpp itself
// (tools/llama_cpp_refs/tokenizer_random_cases.mjs, npm node-llama-cpp; build facts in
// tests/data/llama_cpp/random-cases.build.json): vkstream's ids must equal llama.cpp's for every one.
// The 46 reference cases per vocabulary are hand-picked; these mix the character classes the
// pre-tokenizer regexes tell apart (letters, marks, numbers of other scripts, symbols, emoji, Unicode
// spaces, contractions) at random.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/tokenizer/tokenizer_cases.h"

namespace vks {
namespace {

constexpr size_t kCases = 1000;

class LlamaCppRandomCases : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppRandomCases, EncodeMatchesLlamaCpp) {
  const std::string name = GetParam();
  const gguf::GgufFile file = gguf::GgufFile::open(test::model_path(name + "-vocab.gguf"));
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(file);
  const std::vector<test::TokenizerCase> cases =
      test::load_tokenizer_cases_at(std::string(VKS_SOURCE_DIR) + "/tests/data/llama_cpp/" + name + "-random-cases");
  ASSERT_EQ(cases.size(), kCases) << "reference files missing or malformed under tests/data/llama_cpp";
  size_t mismatches = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const test::TokenizerCase& c = cases[i];
    ASSERT_FALSE(c.ids.empty()) << "case " << i << " has no ids";
    const std::vector<TokenId> got = tok->encode(c.text, /*add_bos=*/false);
    if (got == c.ids) continue;
    // Report the first few in full; the count says how widespread a divergence is.
    if (++mismatches <= 5) {
      ADD_FAILURE() << name << " case " << i << " text: '" << c.text << "'\n  llama.cpp: " << test::show_tokens(*tok, c.ids)
                    << "\n  vkstream:  " << test::show_tokens(*tok, got);
    }
  }
  EXPECT_EQ(mismatches, 0u) << name << ": " << mismatches << " of " << cases.size() << " strings differ from llama.cpp";
}

INSTANTIATE_TEST_SUITE_P(Vocabs, LlamaCppRandomCases, ::testing::Values("llama2", "llama3", "qwen2"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace vks
