// Readable --logprobs output: pieces quoted and escaped, logprobs with 4 decimals, -inf spelled out.
#include <gtest/gtest.h>

#include <cmath>

#include "clients/cli/logprobs_print.h"

namespace {

std::string piece(int32_t id) {
  if (id == 1) return " upon";
  if (id == 2) return "a\n\"b\"\x01";
  std::string other = "<";
  other += std::to_string(id);
  other += '>';
  return other;
}

TEST(LogprobsPrint, RowsShowTokenIdLogprobAndAlternatives) {
  const vks::cli::LogprobRow row{1, -0.01234, {{1, -0.01234}, {2, -INFINITY}}};
  const std::string line = vks::cli::format_logprob_row(row, piece);
  EXPECT_EQ(line, "  \" upon\" (1)              -0.0123  | \" upon\" -0.0123, \"a\\n\\\"b\\\"\\x01\" -inf\n");
  const std::string table = vks::cli::format_logprob_table({row, {7, -2.5, {}}}, piece);
  EXPECT_EQ(table.rfind("logprobs (", 0), 0u);
  EXPECT_NE(table.find("\"<7>\" (7)"), std::string::npos) << table;
  EXPECT_NE(table.find("-2.5000\n"), std::string::npos) << table;
}

TEST(LogprobsPrint, WholeUtf8CharactersStayAndBrokenBytesAreEscaped) {
  using vks::cli::quote_piece;
  EXPECT_EQ(quote_piece(" caf\xc3\xa9"), "\" caf\xc3\xa9\"");                  // é
  EXPECT_EQ(quote_piece("\xf0\x9f\xa6\x99"), "\"\xf0\x9f\xa6\x99\"");          // 🦙
  EXPECT_EQ(quote_piece("\xe2\x96"), "\"\\xe2\\x96\"");                       // half of ▁
  EXPECT_EQ(quote_piece("\xc0\xaf"), "\"\\xc0\\xaf\"");                       // overlong '/'
  EXPECT_EQ(quote_piece("\xed\xa0\x80"), "\"\\xed\\xa0\\x80\"");              // a surrogate
  EXPECT_EQ(quote_piece("a\x96" "b"), "\"a\\x96b\"");                           // lone continuation
}

}  // namespace
