#pragma once
// UTF-8 validation used by decoding: invalid or incomplete sequences become U+FFFD, one per
// maximal subpart (Unicode's recommended practice), so decoded text is always valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vks {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Whole-string version: valid sequences are copied, every maximal invalid subpart is replaced.
std::string utf8_sanitize(std::string_view bytes);

// Streaming version with the same result: feed() appends what became complete to `out` and keeps
// the bytes of a sequence that may still become valid; finish() replaces a held incomplete tail.
class Utf8Stream {
 public:
  void feed(std::string_view bytes, std::string& out);
  void finish(std::string& out);
  bool has_pending() const { return !pending_.empty(); }

 private:
  std::string pending_;  // lead byte and continuation bytes of an incomplete character (<= 3)
};

// Bytes a character with this lead byte needs (1..4), or 0 if it cannot start a character.
int utf8_sequence_length(unsigned char lead);
// Whether `b` is a valid continuation at index `index` (1..3) of a sequence starting with `lead`.
bool utf8_valid_continuation(unsigned char lead, int index, unsigned char b);
// The code point of the well-formed character at s[pos] (pos then past it); false, with pos and
// cp untouched, when none starts there (invalid or cut short).
bool utf8_decode(std::string_view s, size_t& pos, uint32_t& cp);

}  // namespace vks
