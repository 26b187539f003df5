#include "server/http/keep_alive.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "protocol/model_fields.h"

namespace vks::http {

namespace {

// The seconds one Go duration unit stands for, and how many bytes its name takes; 0 when `s` does
// not start with a unit.
double unit_seconds(const std::string& s, size_t at, size_t& length) {
  struct Unit {
    const char* name;
    double seconds;
  };
  // Longest first: "ms" before "m", "ns" before ... ("µs" is U+00B5, "μs" is U+03BC, as Go).
  static constexpr Unit kUnits[] = {{"ns", 1e-9}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"\xCE\xBCs", 1e-6},
                                    {"ms", 1e-3}, {"s", 1.0},   {"m", 60.0},          {"h", 3600.0}};
  for (const Unit& u : kUnits) {
    const std::string name = u.name;
    if (s.compare(at, name.size(), name) == 0) {
      length = name.size();
      return u.seconds;
    }
  }
  length = 0;
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Whole seconds as Ollama's fallback reads them (strconv.Atoi: optional sign, digits only).
std::optional<double> parse_integer_seconds(const std::string& text) {
  size_t i = text.size() > 0 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (i >= text.size()) return std::nullopt;
  for (size_t k = i; k < text.size(); ++k) {
    if (!is_digit(text[k])) return std::nullopt;
  }
  return std::strtod(text.c_str(), nullptr);
}

ApiError bad_keep_alive(const std::string& why) {
  return bad_field("keep_alive " + why +
                       ": send seconds (a number; negative keeps the model loaded, 0 unloads it) or a duration "
                       "such as \"5m\", \"1h30m\", \"300ms\"",
                   "keep_alive");
}

double bounded(double seconds) {
  if (seconds < 0) return -1.0;
  return std::min(seconds, proto::detail::kMaxKeepAliveSeconds);
}

}  // namespace

std::optional<double> parse_go_duration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t i = 0;
  double sign = 1.0;
  if (text[0] == '-' || text[0] == '+') {
    sign = text[0] == '-' ? -1.0 : 1.0;
    i = 1;
  }
  if (text.substr(i) == "0") return 0.0;  // Go: "0" is the one duration without a unit
  if (i >= text.size()) return std::nullopt;
  double total = 0;
  while (i < text.size()) {
    // [digits][.digits] then a unit; at least one digit on either side of the dot.
    const size_t start = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    const size_t int_end = i;
    size_t frac_digits = 0;
    if (i < text.size() && text[i] == '.') {
      ++i;
      while (i < text.size() && is_digit(text[i])) ++i, ++frac_digits;
    }
    if (int_end == start && frac_digits == 0) return std::nullopt;
    const double value = std::strtod(text.substr(start, i - start).c_str(), nullptr);
    size_t unit_length = 0;
    const double unit = unit_seconds(text, i, unit_length);
    if (unit_length == 0) return std::nullopt;  // Go: "missing unit" / "unknown unit"
    i += unit_length;
    total += value * unit;
  }
  if (!std::isfinite(total)) return std::nullopt;
  return sign * total;
}

std::variant<double, ApiError> parse_keep_alive(const JsonBody& value) {
  if (value.is_number()) {
    const double seconds = value.get<double>();
    if (!std::isfinite(seconds)) return bad_keep_alive("is not a finite number");
    return bounded(seconds);
  }
  if (!value.is_string()) return bad_keep_alive("must be a number or a duration string");
  const std::string text = value.get<std::string>();
  if (auto seconds = parse_go_duration(text)) return bounded(*seconds);
  if (auto seconds = parse_integer_seconds(text)) return bounded(*seconds);
  return bad_keep_alive("'" + text.substr(0, 64) + "' is not a duration");
}

std::variant<std::optional<double>, ApiError> read_keep_alive(const JsonBody& body) {
  const auto it = body.find("keep_alive");
  if (it == body.end() || it->is_null()) return std::optional<double>{};
  auto parsed = parse_keep_alive(*it);
  if (auto* e = std::get_if<ApiError>(&parsed)) return std::move(*e);
  return std::optional<double>{std::get<double>(parsed)};
}

}  // namespace vks::http
