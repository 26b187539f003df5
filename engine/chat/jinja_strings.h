#pragma once
// Python str semantics on UTF-8 text: code point indexing and slicing, Unicode-aware strip,
// split, case mapping (ASCII only: templates only case-map role names and keywords).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vks::jinja::str {

// Byte offsets where each code point starts (invalid bytes count as one code point each), plus
// the total size at the end.
std::vector<size_t> code_point_offsets(std::string_view s);

// s[start:stop:step] with Python's clamping and negative index rules, in code points.
std::string slice(std::string_view s, std::optional<int64_t> start, std::optional<int64_t> stop,
                  std::optional<int64_t> step);

// s[index] in code points; nullopt when out of range.
std::optional<std::string> at(std::string_view s, int64_t index);

size_t length(std::string_view s);  // code points

// Python str.strip()/lstrip()/rstrip(): without chars, Unicode whitespace; with chars, any of those
// code points.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);

// Python str.split(sep, maxsplit); sep nullopt splits on whitespace runs.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);

std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count,
                    size_t max_bytes);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);  // first upper, rest lower
std::string title(std::string_view s);       // each word's first letter upper

}  // namespace vks::jinja::str
