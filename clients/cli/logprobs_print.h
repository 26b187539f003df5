#pragma once
// Readable --logprobs output for `vkstream run` and `generate` (without --json): one line per
// generated token with its text, id and log-probability, then the top-N alternatives.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace vks::cli {

struct LogprobRow {
  int32_t id = 0;
  double logprob = 0;
  std::vector<std::pair<int32_t, double>> top;  // id, logprob
};

// A token's text quoted for display: control characters, quotes and backslashes escaped.
std::string quote_piece(const std::string& piece);

// `  " upon" (407)  -0.0123  | " upon" -0.0123, " a" -4.5678`; piece(id) gives a token's text.
std::string format_logprob_row(const LogprobRow& row, const std::function<std::string(int32_t)>& piece);

// The header line and every row, each ending in '\n'.
std::string format_logprob_table(const std::vector<LogprobRow>& rows, const std::function<std::string(int32_t)>& piece);

}  // namespace vks::cli
