#include "engine/grammar/json_number_range.h"

// This file builds grammar text by string concatenation; GCC 12 reports a false -Wrestrict on
// `"literal" + std::string` at -O3 (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wrestrict
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/grammar/grammar.h"

namespace vks::grammar {

namespace {

constexpr double kLimit = 1e15;

std::string digit_class(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t n) { return n == 0 ? "" : " [0-9]{" + std::to_string(n) + "}"; }

std::string join(const std::vector<std::string>& alts) {
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// Digit strings of s.size() digits (leading zeros allowed) that are >= s / <= s.
std::string at_least_digits(const std::string& s) {
  if (s.size() == 1) return digit_class(s[0], '9');
  std::vector<std::string> alts = {std::string("\"") + s[0] + "\" " + at_least_digits(s.substr(1))};
  if (s[0] < '9') alts.push_back(digit_class(static_cast<char>(s[0] + 1), '9') + any_digits(s.size() - 1));
  return join(alts);
}

std::string at_most_digits(const std::string& s) {
  if (s.size() == 1) return digit_class('0', s[0]);
  std::vector<std::string> alts = {std::string("\"") + s[0] + "\" " + at_most_digits(s.substr(1))};
  if (s[0] > '0') alts.push_back(digit_class('0', static_cast<char>(s[0] - 1)) + any_digits(s.size() - 1));
  return join(alts);
}

// Same-length digit strings in [a, b].
std::string between_digits(const std::string& a, const std::string& b) {
  if (a.size() == 1) return digit_class(a[0], b[0]);
  if (a[0] == b[0]) return std::string("\"") + a[0] + "\" " + between_digits(a.substr(1), b.substr(1));
  std::vector<std::string> alts = {std::string("\"") + a[0] + "\" " + at_least_digits(a.substr(1))};
  if (a[0] + 1 <= b[0] - 1) {
    alts.push_back(digit_class(static_cast<char>(a[0] + 1), static_cast<char>(b[0] - 1)) + any_digits(a.size() - 1));
  }
  alts.push_back(std::string("\"") + b[0] + "\" " + at_most_digits(b.substr(1)));
  return join(alts);
}

// Canonical decimal integers in [lo, hi] (0 <= lo <= hi), or [lo, inf) when !bounded.
std::string nonnegative_range(uint64_t lo, uint64_t hi, bool bounded) {
  const std::string sl = std::to_string(lo);
  std::vector<std::string> alts;
  if (bounded) {
    const std::string sh = std::to_string(hi);
    if (sl.size() == sh.size()) return between_digits(sl, sh);
    alts.push_back(between_digits(sl, std::string(sl.size(), '9')));
    for (size_t len = sl.size() + 1; len < sh.size(); ++len) alts.push_back("[1-9]" + any_digits(len - 1));
    alts.push_back(between_digits("1" + std::string(sh.size() - 1, '0'), sh));
    return join(alts);
  }
  alts.push_back(between_digits(sl, std::string(sl.size(), '9')));
  alts.push_back("[1-9] [0-9]{" + std::to_string(sl.size()) + ",15}");
  return join(alts);
}

// Integers in [lo, hi]; unbounded sides as flags.
std::string integer_range(int64_t lo, bool has_lo, int64_t hi, bool has_hi) {
  std::vector<std::string> alts;
  if (!has_lo || lo < 0) {  // the negative part: magnitudes [max(1, -hi), -lo]
    const uint64_t mag_lo = (has_hi && hi < 0) ? static_cast<uint64_t>(-hi) : 1;
    alts.push_back("\"-\" " + nonnegative_range(mag_lo, has_lo ? static_cast<uint64_t>(-lo) : 0, has_lo));
  }
  if (!has_hi || hi >= 0) {
    const uint64_t from = (has_lo && lo > 0) ? static_cast<uint64_t>(lo) : 0;
    alts.push_back(nonnegative_range(from, has_hi ? static_cast<uint64_t>(hi) : 0, has_hi));
  }
  return join(alts);
}

}  // namespace

std::string number_range_gbnf(const NumberBounds& b, bool integer) {
  if ((b.has_min && !(std::fabs(b.min) <= kLimit)) || (b.has_max && !(std::fabs(b.max) <= kLimit))) {
    throw CompileError(0, "numeric bounds beyond +-1e15 are not supported");
  }
  // Integral bounds of the integers in range.
  double lo = 0, hi = 0;
  if (b.has_min) lo = (b.min_exclusive && std::floor(b.min) == b.min) ? b.min + 1 : std::ceil(b.min);
  if (b.has_max) hi = (b.max_exclusive && std::floor(b.max) == b.max) ? b.max - 1 : std::floor(b.max);
  const bool fractions = !integer && b.has_min && !b.min_exclusive && b.min >= 0 && std::floor(b.min) == b.min &&
                         (!b.has_max || std::floor(b.max) == b.max);
  if (fractions) {
    // k.fraction with k in [min, max-1] stays below max; max itself only as an integer.
    const auto ilo = static_cast<int64_t>(b.min);
    const std::string frac = " (\".\" [0-9]{1,16})?";
    if (!b.has_max) return integer_range(ilo, true, 0, false) + frac;
    const auto ihi = static_cast<int64_t>(b.max);
    if (ihi < ilo) throw CompileError(0, "no number lies within the bounds");
    std::string out = ihi > ilo ? integer_range(ilo, true, ihi - 1, true) + frac : "";
    if (!b.max_exclusive) out += (out.empty() ? "" : " | ") + integer_range(ihi, true, ihi, true);
    if (out.empty()) throw CompileError(0, "no number lies within the bounds");
    return out;
  }
  if (b.has_min && b.has_max && hi < lo) throw CompileError(0, "no integer lies within the bounds");
  return integer_range(static_cast<int64_t>(lo), b.has_min, static_cast<int64_t>(hi), b.has_max);
}

}  // namespace vks::grammar
