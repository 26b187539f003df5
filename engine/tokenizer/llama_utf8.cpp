#include "engine/tokenizer/llama_utf8.h"

#include <cstdint>

namespace vks {
namespace {

void append_utf8(uint32_t cpt, std::string& out) {
  if (cpt < 0x80) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

// One code point as llama.cpp's unicode_cpt_from_utf8 reads it (lead-byte pattern and
// continuation bytes only); returns false for a byte it rejects.
bool llama_decode_cpt(std::string_view s, size_t& offset, uint32_t& cpt) {
  const auto at = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(s[offset + i])); };
  const auto cont = [&](size_t i) { return offset + i < s.size() && (at(i) & 0xC0) == 0x80; };
  const uint32_t c0 = at(0);
  if (!(c0 & 0x80)) {
    cpt = c0;
    offset += 1;
    return true;
  }
  if (!(c0 & 0x40)) return false;
  if (!(c0 & 0x20)) {
    if (!cont(1)) return false;
    cpt = ((c0 & 0x1F) << 6) | (at(1) & 0x3F);
    offset += 2;
    return true;
  }
  if (!(c0 & 0x10)) {
    if (!cont(1) || !cont(2)) return false;
    cpt = ((c0 & 0x0F) << 12) | ((at(1) & 0x3F) << 6) | (at(2) & 0x3F);
    offset += 3;
    return true;
  }
  if (!(c0 & 0x08)) {
    if (!cont(1) || !cont(2) || !cont(3)) return false;
    cpt = ((c0 & 0x07) << 18) | ((at(1) & 0x3F) << 12) | ((at(2) & 0x3F) << 6) | (at(3) & 0x3F);
    offset += 4;
    return true;
  }
  return false;
}

}  // namespace

bool sanitize_utf8_like_llama(std::string_view text, std::string& out) {
  size_t offset = 0;
  uint32_t cpt = 0;
  // Fast path: strictly valid UTF-8 is used as it is.
  bool valid = true;
  while (offset < text.size()) {
    const size_t start = offset;
    if (!llama_decode_cpt(text, offset, cpt)) {
      valid = false;
      break;
    }
    const size_t len = offset - start;
    const bool shortest = (len == 1) || (len == 2 && cpt >= 0x80) || (len == 3 && cpt >= 0x800) ||
                          (len == 4 && cpt >= 0x10000);
    if (!shortest || (cpt >= 0xD800 && cpt <= 0xDFFF) || cpt > 0x10FFFF) {
      valid = false;
      break;
    }
  }
  if (valid) return false;
  out.clear();
  out.reserve(text.size() + 16);
  offset = 0;
  while (offset < text.size()) {
    if (!llama_decode_cpt(text, offset, cpt)) {
      ++offset;
      cpt = 0xFFFD;
    }
    if ((cpt >= 0xD800 && cpt <= 0xDFFF) || cpt > 0x10FFFF) cpt = 0xFFFD;
    append_utf8(cpt, out);
  }
  return true;
}

}  // namespace vks
