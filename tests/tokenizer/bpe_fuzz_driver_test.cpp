// Drives the BPE fuzz target (fuzz_bpe.cpp) without clang: random bytes, mutated multilingual
// text, long runs of one character and a multi-megabyte input, on both BPE vocabularies.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int run(const std::string& input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

TEST(BpeFuzz, RandomBytes) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 120);
  for (int i = 0; i < 6000; ++i) {
    std::string input;
    const int n = length(rng);
    for (int k = 0; k < n; ++k) input.push_back(static_cast<char>(byte(rng)));
    ASSERT_EQ(run(input), 0);
  }
}

TEST(BpeFuzz, MutatedText) {
  const std::vector<std::string> seeds = {
      "Hello, y'all! How are you \xF0\x9F\x98\x81 ?\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8",
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
      "<|im_start|>system\nYou are<tool_call>{\"a\": 1}</tool_call><|im_end|>\n",
      "   Hello\n    Hello\r\n\t\t 3333333 1234567890 \xC2\xA0\xC2\x85 \xE3\x80\x80",
      "\xD0\xBD\xD0\xB5\xD1\x89\xD0\xBE I'M you'LL 's 'd \xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D",
  };
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 6000; ++i) {
    std::string input(1, static_cast<char>(byte(rng)));
    input += seeds[static_cast<size_t>(i) % seeds.size()];
    const int edits = 1 + byte(rng) % 8;
    for (int e = 0; e < edits && input.size() > 1; ++e) {
      const size_t pos = 1 + static_cast<size_t>(byte(rng)) % (input.size() - 1);
      switch (byte(rng) % 4) {
        case 0: input[pos] = static_cast<char>(byte(rng)); break;                  // flip
        case 1: input.erase(pos, 1); break;                                          // delete
        case 2: input.insert(pos, 1, static_cast<char>(0x80 | byte(rng))); break;  // stray byte
        default: input.insert(pos, input.substr(pos, 4)); break;                     // repeat
      }
    }
    ASSERT_EQ(run(input), 0);
  }
}

TEST(BpeFuzz, LongRunsOfOneCharacter) {
  const std::vector<std::string> units = {" ", "a", "7", "\n", "\t", "'", "!", "\xF0\x9F\xA6\x99", "\xE4\xB8\x80",
                                          "\xC2\xA0", "\xFF", "ab ", "\r\n", "'s"};
  for (const std::string& unit : units) {
    std::string text;
    while (text.size() < 60000) text += unit;
    for (const char options : {'\0', '\4'}) {  // Llama 3, Qwen2.5
      const auto start = std::chrono::steady_clock::now();
      ASSERT_EQ(run(std::string(1, options) + text), 0);
      // Loose bound: a run must not be quadratic (which would take minutes here).
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << "unit '" << unit << "'";
    }
  }
}

TEST(BpeFuzz, HugeMixedInput) {
  std::mt19937 rng(29);
  const std::vector<std::string> words = {"the", " quick", " \xE6\x97\xA5\xE6\x9C\xAC", "\xF0\x9F\xA6\x99", " 12345",
                                          "\n\n", "\xD0\xBF\xD1\x80\xD0\xB8", " don't", "\xFE", "  "};
  std::uniform_int_distribution<size_t> pick(0, words.size() - 1);
  std::string text(1, '\6');  // Qwen2.5, parse special
  while (text.size() < 2 * 1024 * 1024) text += words[pick(rng)];
  ASSERT_EQ(run(text), 0);
  text[0] = '\1';  // Llama 3 with BOS
  ASSERT_EQ(run(text), 0);
}

}  // namespace
