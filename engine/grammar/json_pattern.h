#pragma once
// A simple regular expression (a JSON Schema string `pattern`) -> a GBNF expression for the
// characters of the JSON string body. Supported: literal characters, escapes of metacharacters,
// classes [...] / [^...] with ranges, . \d \w \s \D \W \S, groups ( ) and (?: ), alternation |,
// quantifiers * + ? {m} {m,} {m,n} (a lazy '?' suffix is accepted), ^ at the start and $ at the end.
// The produced strings match the whole pattern, which satisfies JSON Schema's search semantics.
// Characters that JSON must escape (", \ and controls) are left out of classes and written as
// their JSON escape when literal. Throws CompileError (offset = position in the pattern).
#include <string>
#include <string_view>

namespace vks::grammar {

std::string json_pattern_to_gbnf(std::string_view pattern);

}  // namespace vks::grammar
