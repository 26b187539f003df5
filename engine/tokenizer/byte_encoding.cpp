#include "engine/tokenizer/byte_encoding.h"

#include <array>
#include <cstdint>

namespace vks {
namespace {

// The code point GPT-2 assigns to each byte: printable Latin-1 bytes keep their value, the other
// 68 bytes take 256, 257, ... in byte order.
struct ByteAlphabet {
  std::array<uint32_t, 256> byte_to_cpt{};
  std::array<std::string, 256> byte_to_utf8{};
  std::array<int16_t, 512> cpt_to_byte{};  // every alphabet code point is < 324; -1 = not in it

  ByteAlphabet() {
    cpt_to_byte.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cpt = printable ? b : next++;
      byte_to_cpt[b] = cpt;
      cpt_to_byte[cpt] = static_cast<int16_t>(b);
      std::string& s = byte_to_utf8[b];
      if (cpt < 0x80) {
        s.push_back(static_cast<char>(cpt));
      } else {
        s.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
        s.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
      }
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

}  // namespace

void byte_encode_append(std::string_view bytes, std::string& out) {
  const ByteAlphabet& a = alphabet();
  for (const char c : bytes) out += a.byte_to_utf8[static_cast<unsigned char>(c)];
}

std::string byte_decode(std::string_view encoded) {
  const ByteAlphabet& a = alphabet();
  std::string out;
  out.reserve(encoded.size());
  for (size_t i = 0; i < encoded.size();) {
    const auto c0 = static_cast<unsigned char>(encoded[i]);
    // Every alphabet character is one or two UTF-8 bytes (code points < 0x800).
    if (c0 < 0x80) {
      const int16_t b = a.cpt_to_byte[c0];
      if (b >= 0) {
        out.push_back(static_cast<char>(b));
      } else {
        out.push_back(static_cast<char>(c0));
      }
      ++i;
      continue;
    }
    if ((c0 & 0xE0) == 0xC0 && i + 1 < encoded.size() &&
        (static_cast<unsigned char>(encoded[i + 1]) & 0xC0) == 0x80) {
      const uint32_t cpt = ((c0 & 0x1Fu) << 6) | (static_cast<unsigned char>(encoded[i + 1]) & 0x3Fu);
      const int16_t b = cpt < a.cpt_to_byte.size() ? a.cpt_to_byte[cpt] : int16_t{-1};
      if (b >= 0) {
        out.push_back(static_cast<char>(b));
      } else {
        out.append(encoded.substr(i, 2));
      }
      i += 2;
      continue;
    }
    out.push_back(static_cast<char>(c0));  // other characters (and stray bytes) stay as they are
    ++i;
  }
  return out;
}

}  // namespace vks
