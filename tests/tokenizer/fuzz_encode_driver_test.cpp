// Drives the tokenizer fuzz target with random and mutated inputs so it runs without clang.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int run(const std::string& input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

TEST(TokenizerFuzz, RandomBytes) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 200);
  for (int i = 0; i < 20000; ++i) {
    std::string input;
    const int n = length(rng);
    for (int k = 0; k < n; ++k) input.push_back(static_cast<char>(byte(rng)));
    ASSERT_EQ(run(input), 0);
  }
}

TEST(TokenizerFuzz, MutatedText) {
  const std::vector<std::string> seeds = {
      "Hello, y'all! How are you \xF0\x9F\x98\x81 ?\xE6\x88\x91\xE6\x83\xB3", "<s>Hello</s><unk>",
      "   Hello\n    Hello", "\xD0\xBD\xD0\xB5\xD1\x89\xD0\xBE 3333333 \t\t\n", "Once upon a time"};
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 20000; ++i) {
    std::string input(1, static_cast<char>(byte(rng)));
    input += seeds[static_cast<size_t>(i) % seeds.size()];
    const int edits = 1 + byte(rng) % 8;
    for (int e = 0; e < edits && input.size() > 1; ++e) {
      const size_t pos = 1 + static_cast<size_t>(byte(rng)) % (input.size() - 1);
      switch (byte(rng) % 4) {
        case 0: input[pos] = static_cast<char>(byte(rng)); break;          // flip
        case 1: input.erase(pos, 1); break;                                  // delete
        case 2: input.insert(pos, 1, static_cast<char>(0x80 | byte(rng))); break;  // stray byte
        default: input.insert(pos, input.substr(pos, 4)); break;             // repeat
      }
    }
    ASSERT_EQ(run(input), 0);
  }
}

}  // namespace
