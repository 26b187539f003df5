// Drives the tool-parser fuzz target without clang: random bytes and mutated answers in each
// format (the target traps on a crash or on a split that parses differently from the whole).
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

TEST(ToolParserFuzz, RandomBytes) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 200);
  for (int i = 0; i < 3000; ++i) {
    std::string input;
    for (int k = length(rng); k > 0; --k) input.push_back(static_cast<char>(byte(rng)));
    ASSERT_EQ(run(input), 0);
  }
}

TEST(ToolParserFuzz, MutatedAnswers) {
  const std::vector<std::string> seeds = {
      std::string(1, '\0') + "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, {\"b\": \"}\\\"\"}]}}\n</tool_call>\n<tool_call>{\"name\":\"g\"}</tool_call>",
      std::string("\x01") + " {\"name\": \"f\", \"parameters\": {\"q\": \"x\\\\\"}}",
      std::string("\x02") + "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": \"{}\"}]"};
  static const char kAlphabet[] = "{}[]\",:\\ \n<>/_abcdefghilmnorstuTOLCAS0123456789";
  std::mt19937 rng(6);
  for (int i = 0; i < 6000; ++i) {
    std::string input = seeds[static_cast<size_t>(i) % seeds.size()];
    std::uniform_int_distribution<int> edits(1, 6);
    for (int e = edits(rng); e > 0; --e) {
      std::uniform_int_distribution<size_t> pos(1, input.size());
      const size_t at = pos(rng);
      const char ch = kAlphabet[std::uniform_int_distribution<size_t>(0, sizeof(kAlphabet) - 2)(rng)];
      switch (rng() % 3) {
        case 0: input.insert(input.begin() + static_cast<std::ptrdiff_t>(at), ch); break;
        case 1: if (at < input.size()) input.erase(at, 1); break;
        default: if (at < input.size()) input[at] = ch; break;
      }
    }
    ASSERT_EQ(run(input), 0) << input;
  }
}

}  // namespace
