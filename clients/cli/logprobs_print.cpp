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

}  // namespace

std::string quote_piece(const std::string& piece) {
  std::string out = "\"";
  for (unsigned char c : piece) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
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
