// Random, hostile vocabularies (empty and odd token strings, any token types, special ids out of
// range, infinite or NaN scores): loading either fails with vks::Error or gives a tokenizer that
// encodes and decodes any input without crashing (run under ASan/UBSan in CI).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/tokenizer/gguf_bytes.h"

namespace vks {
namespace {

std::string random_piece(std::mt19937& rng) {
  static const std::vector<std::string> parts = {"\xE2\x96\x81", "a", "b", "ab", "<", ">", "<0x41>", "<0xZZ>", "<s>",
                                                 "\xC3", "\xA9", "\xF0\x9F", " ", "\n", "", "<|x|>"};
  std::uniform_int_distribution<size_t> pick(0, parts.size() - 1);
  std::uniform_int_distribution<int> count(0, 3);
  std::string s;
  for (int i = count(rng); i > 0; --i) s += parts[pick(rng)];
  return s;
}

TEST(HostileVocab, LoadsOrFailsCleanlyAndNeverCrashes) {
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> size(1, 60);
  std::uniform_int_distribution<int> type(0, 6);
  std::uniform_int_distribution<int> coin(0, 9);
  std::normal_distribution<float> score(0, 3);
  int loaded = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const int n = size(rng);
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (int i = 0; i < n; ++i) {
      tokens.push_back(random_piece(rng));
      const int c = coin(rng);
      scores.push_back(c == 0 ? std::numeric_limits<float>::infinity()
                              : c == 1 ? -std::numeric_limits<float>::infinity()
                                       : c == 2 && trial % 50 == 0 ? std::nanf("") : score(rng));
      types.push_back(trial % 40 == 0 && i == 0 ? 7 : coin(rng) < 6 ? 1 : type(rng));  // 7: not a token type
    }
    test::GgufBytes g;
    g.str("tokenizer.ggml.model", "llama").strings("tokenizer.ggml.tokens", tokens);
    g.floats("tokenizer.ggml.scores", scores).ints("tokenizer.ggml.token_type", types);
    if (coin(rng) < 5) g.u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(coin(rng) * 10));
    if (coin(rng) < 5) g.u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(coin(rng) * 10));
    if (coin(rng) < 3) g.boolean("tokenizer.ggml.add_space_prefix", coin(rng) < 5);
    const std::vector<uint8_t> bytes = g.bytes();
    std::unique_ptr<Tokenizer> tok;
    try {
      const gguf::GgufFile file = gguf::GgufFile::parse(bytes);
      tok = Tokenizer::from_gguf(file);
    } catch (const Error&) {
      continue;  // a clear error is an acceptable answer to a bad vocabulary
    }
    ++loaded;
    for (int k = 0; k < 4; ++k) {
      std::string text;
      for (int i = coin(rng); i >= 0; --i) text += random_piece(rng);
      const std::vector<TokenId> ids = tok->encode(text, coin(rng) < 5, coin(rng) < 5);
      for (const TokenId id : ids) ASSERT_TRUE(id >= 0 && id < tok->vocab_size()) << "trial " << trial;
      const std::string decoded = tok->decode(ids);
      ASSERT_EQ(utf8_sanitize(decoded), decoded);
      IncrementalDetokenizer d(*tok);
      std::string streamed;
      for (const TokenId id : ids) streamed += d.push(id);
      ASSERT_EQ(streamed + d.flush(), decoded) << "trial " << trial;
    }
  }
  EXPECT_GT(loaded, 1000);  // most random vocabularies are valid: the encode path is exercised
}

}  // namespace
}  // namespace vks
