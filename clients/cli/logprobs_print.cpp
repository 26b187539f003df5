#include "clients/cli/logprobs_print.h"

#include <cmath>
#include <cstdio>

namespace vks::cli {
namespace {

std::string number(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// Length of the valid UTF-8 character starting at s[i] (0 if the bytes there do not form one).
size_t utf8_char_length(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  const size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  if (n == 3 && ((c == 0xe0 && byte(i + 1) < 0xa0) || (c == 0xed && byte(i + 1) >= 0xa0))) return 0;
  if (n == 4 && ((c == 0xf0 && byte(i + 1) < 0x90) || (c == 0xf4 && byte(i + 1) >= 0x90))) return 0;
  return n;
}

std::string hex_escape(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  return buf;
}

}  // namespace

// A token's raw bytes may hold part of a UTF-8 character (byte-level BPE, SentencePiece byte
// tokens): such bytes are shown as \xNN so the table never prints broken characters.
std::string quote_piece(const std::string& piece) {
  std::string out = "\"";
  for (size_t i = 0; i < piece.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(piece[i]);
    if (c >= 0x80) {
      const size_t n = utf8_char_length(piece, i);
      if (n == 0) {
        out += hex_escape(c);
      } else {
        out.append(piece, i, n);
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += hex_escape(c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string format_logprob_row(const LogprobRow& row, const std::function<std::string(int32_t)>& piece) {
  std::string token = quote_piece(piece(row.id)) + " (" + std::to_string(row.id) + ")";
  if (token.size() < 24) token.resize(24, ' ');
  std::string line = "  " + token + " " + number(row.logprob);
  if (!row.top.empty()) {
    line += "  |";
    for (size_t i = 0; i < row.top.size(); ++i) {
      line += (i == 0 ? " " : ", ") + quote_piece(piece(row.top[i].first)) + " " + number(row.top[i].second);
    }
  }
  return line + "\n";
}

std::string format_logprob_table(const std::vector<LogprobRow>& rows, const std::function<std::string(int32_t)>& piece) {
  std::string out = "logprobs (token (id) logprob | top alternatives):\n";
  for (const LogprobRow& row : rows) out += format_logprob_row(row, piece);
  return out;
}

}  // namespace vks::cli
