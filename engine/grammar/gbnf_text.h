#pragma once
// Helpers that write GBNF source text (used by the JSON Schema and regex compilers).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar.h"

namespace vks::grammar {

// A GBNF string literal matching exactly `bytes` (UTF-8): "..." with escapes where needed.
std::string gbnf_literal(std::string_view bytes);
// One code point as it may appear inside a GBNF literal or class.
std::string gbnf_char(uint32_t cp);
// A GBNF class "[...]" or "[^...]" from code point ranges.
std::string gbnf_class(const std::vector<CodepointRange>& ranges, bool negated);

}  // namespace vks::grammar
