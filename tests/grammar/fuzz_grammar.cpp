// Fuzz target for the grammar compilers. The first byte picks the parser: GBNF text (then the
// rest of the input is also fed to the matcher), JSON Schema text (the produced GBNF must parse or
// fail with a CompileError), or a string pattern. Anything but a CompileError is a bug.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/json_pattern.h"
#include "engine/grammar/json_schema.h"

namespace {

void run_matcher(const vks::grammar::Grammar& g, std::string_view input) {
  auto shared = std::make_shared<vks::grammar::Grammar>(g);
  vks::grammar::GrammarMatcher m(shared);
  for (size_t i = 0; i < input.size() && i < 64; ++i) m.accept(input.substr(i, 1));
  (void)m.can_end();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view all(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 3) {
      case 0: {
        const auto g = vks::grammar::parse_gbnf(all);
        run_matcher(g, all);
        break;
      }
      case 1: {
        const std::string gbnf = vks::grammar::json_schema_text_to_gbnf(all);
        const auto g = vks::grammar::parse_gbnf(gbnf);
        run_matcher(g, all);
        break;
      }
      default:
        (void)vks::grammar::json_pattern_to_gbnf(all);
        break;
    }
  } catch (const vks::grammar::CompileError&) {
    // expected for bad input
  } catch (...) {
    std::abort();
  }
  return 0;
}
