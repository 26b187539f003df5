#include "engine/grammar/gbnf_text.h"

#include <cstdio>

namespace vks::grammar {

std::string gbnf_char(uint32_t cp) {
  const bool plain = (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') ||
                     cp == ' ' || cp == '_' || cp == ',' || cp == ':' || cp == '.' || cp == '{' || cp == '}' ||
                     cp == '(' || cp == ')' || cp == '+' || cp == '=' || cp == '@' || cp == '!' || cp == '?';
  if (plain) return std::string(1, static_cast<char>(cp));
  char buf[16];
  if (cp < 0x80) {
    std::snprintf(buf, sizeof buf, "\\x%02X", cp);
  } else if (cp < 0x10000) {
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  }
  return buf;
}

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == 0x7F) {
      out += gbnf_char(c);
    } else {
      out += static_cast<char>(c);  // UTF-8 bytes pass through; the parser decodes them
    }
  }
  out.push_back('"');
  return out;
}

std::string gbnf_class(const std::vector<CodepointRange>& ranges, bool negated) {
  std::string out = negated ? "[^" : "[";
  for (const auto& r : ranges) {
    out.append(gbnf_char(r.first));
    if (r.last != r.first) {
      out.push_back('-');
      out.append(gbnf_char(r.last));
    }
  }
  out.push_back(']');
  return out;
}

}  // namespace vks::grammar
