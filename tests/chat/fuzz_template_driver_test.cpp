// Drives the template fuzz target with random and mutated templates so it runs without clang;
// the corpus includes hostile templates (endless loops, deep nesting, huge outputs).
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

const std::vector<std::string>& seeds() {
  static const std::vector<std::string> kSeeds = {
      "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] | trim + '<|im_end|>' }}{% endfor %}",
      "{%- set ns = namespace(a=1, b=messages|length - 1) %}{% for m in messages[::-1] %}{% set ns.a = ns.a + loop.index0 %}{% endfor %}{{ ns.a }}",
      "{% if messages[0]['role'] == 'system' %}{{ messages[0].content.split(' ')[-1].strip() }}{% elif x is defined %}y{% else %}{{ raise_exception('no') }}{% endif %}",
      "{% macro f(a, b=2) %}{{ a ~ b }}{% endmacro %}{{ f(1) }}{{ f(a=3, b='x') | upper }}",
      "{{ {'a': [1, 2.5, none, true], 'b': 'q\"'} | tojson }}{{ 'abc'[1:] }}{{ range(3) | list | join(',') }}",
      "{% for i in range(1000000) %}{% for j in range(1000000) %}x{% endfor %}{% endfor %}",
      "{% set s = 'ab' %}{% for i in range(60) %}{% set s = s + s %}{% endfor %}{{ s }}",
      "{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}",
      "{{ ((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))) }}",
      "{{ 'x' * 100000000 }}{{ [1] * 100000000 }}{{ 2 ** 62 * 4 }}{{ -9223372036854775807 - 1 }}",
      "{% raw %}{{ not }}{% endraw %}{# c #}{%- if true -%}  a  {%- endif -%}",
      "{% for a, b in {'k': 'v'}.items() if a %}{{ loop.first }}{{ a }}{% else %}e{% endfor %}",
      // Issue 37's attacks: a list doubled 64 times, a quadratic list build, a slow scan.
      "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
      "{% set ns = namespace(l=[]) %}{% for i in range(200000) %}{% set ns.l = ns.l + [i] %}{% endfor %}",
      "{% set s = 'a' * 60000 %}{% for i in range(1000000) %}{% set n = s.count('b') %}{% endfor %}",
  };
  return kSeeds;
}

TEST(ChatTemplateFuzz, SeedsRunWithinLimits) {
  const auto start = std::chrono::steady_clock::now();
  for (const auto& s : seeds()) ASSERT_EQ(run(s), 0) << s;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(ChatTemplateFuzz, RandomBytes) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 120);
  for (int i = 0; i < 5000; ++i) {
    std::string input;
    const int n = length(rng);
    for (int k = 0; k < n; ++k) input.push_back(static_cast<char>(byte(rng)));
    ASSERT_EQ(run(input), 0);
  }
}

TEST(ChatTemplateFuzz, MutatedTemplates) {
  static const char kAlphabet[] = "{}%#-+()[]'\".,:|~*/ \n=<>!abcdeflmnorstu0123456789";
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 8000; ++i) {
    std::string input = seeds()[static_cast<size_t>(i) % seeds().size()];
    const int edits = 1 + byte(rng) % 6;
    for (int e = 0; e < edits && !input.empty(); ++e) {
      const size_t pos = static_cast<size_t>(byte(rng) * 257 + byte(rng)) % input.size();
      const char c = kAlphabet[static_cast<size_t>(byte(rng)) % (sizeof kAlphabet - 1)];
      switch (byte(rng) % 4) {
        case 0: input[pos] = c; break;
        case 1: input.erase(pos, 1); break;
        case 2: input.insert(pos, 1, c); break;
        default: input.insert(pos, input.substr(pos, 6)); break;
      }
    }
    ASSERT_EQ(run(input), 0) << input;
  }
}

TEST(ChatTemplateFuzz, DeepNestingIsRefusedNotOverflowed) {
  for (const char* open : {"(", "[", "-", "not ", "{% if x %}", "x|"}) {
    std::string deep = "{{ ";
    for (int i = 0; i < 20000; ++i) deep += open;
    ASSERT_EQ(run(deep), 0) << open;
  }
}

}  // namespace
