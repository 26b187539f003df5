#include "engine/tokenizer/utf8.h"

namespace vks {

int utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // continuation byte, overlong lead (C0, C1) or beyond U+10FFFF (F5..FF)
}

bool utf8_valid_continuation(unsigned char lead, int index, unsigned char b) {
  if (index == 1) {
    // The second byte's range excludes overlong forms, surrogates and code points > U+10FFFF.
    switch (lead) {
      case 0xE0: return b >= 0xA0 && b <= 0xBF;
      case 0xED: return b >= 0x80 && b <= 0x9F;
      case 0xF0: return b >= 0x90 && b <= 0xBF;
      case 0xF4: return b >= 0x80 && b <= 0x8F;
      default: break;
    }
  }
  return b >= 0x80 && b <= 0xBF;
}

bool utf8_decode(std::string_view s, size_t& pos, uint32_t& cp) {
  if (pos >= s.size()) return false;
  const auto lead = static_cast<unsigned char>(s[pos]);
  const int len = utf8_sequence_length(lead);
  if (len == 0 || s.size() - pos < static_cast<size_t>(len)) return false;
  uint32_t v = len == 1 ? lead : (lead & (0x7Fu >> len));
  for (int i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[pos + static_cast<size_t>(i)]);
    if (!utf8_valid_continuation(lead, i, b)) return false;
    v = (v << 6) | (b & 0x3Fu);
  }
  cp = v;
  pos += static_cast<size_t>(len);
  return true;
}

std::string utf8_sanitize(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    const int need = utf8_sequence_length(lead);
    if (need == 0) {
      out += kReplacementChar;
      ++i;
      continue;
    }
    int have = 1;
    while (have < need && i + have < bytes.size() &&
           utf8_valid_continuation(lead, have, static_cast<unsigned char>(bytes[i + have]))) {
      ++have;
    }
    if (have == need) {
      out.append(bytes.substr(i, need));
    } else {
      out += kReplacementChar;  // the maximal subpart: lead plus the valid continuations seen
    }
    i += have;
  }
  return out;
}

void Utf8Stream::feed(std::string_view bytes, std::string& out) {
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if (!pending_.empty()) {
      const auto lead = static_cast<unsigned char>(pending_[0]);
      const int index = static_cast<int>(pending_.size());
      if (utf8_valid_continuation(lead, index, b)) {
        pending_.push_back(c);
        if (static_cast<int>(pending_.size()) == utf8_sequence_length(lead)) {
          out += pending_;
          pending_.clear();
        }
        continue;
      }
      out += kReplacementChar;  // the held bytes can no longer form a character
      pending_.clear();
      // fall through: `b` starts afresh
    }
    const int need = utf8_sequence_length(b);
    if (need == 1) {
      out.push_back(c);
    } else if (need == 0) {
      out += kReplacementChar;
    } else {
      pending_.push_back(c);
    }
  }
}

void Utf8Stream::finish(std::string& out) {
  if (!pending_.empty()) {
    out += kReplacementChar;
    pending_.clear();
  }
}

}  // namespace vks
