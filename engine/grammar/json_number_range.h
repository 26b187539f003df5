#pragma once
// GBNF for JSON numbers within bounds (JSON Schema minimum/maximum/exclusive*), built digit by
// digit (e.g. 17..243 = "1" [7-9] | [2-9] [0-9] | "1" [0-9]{2} | "2" [0-3] [0-9] | "24" [0-3]).
// Integers: exactly the integers in range. Numbers: fractions are produced when the range starts
// at an inclusive integral minimum >= 0 and its maximum (if any) is integral; otherwise only the
// integral values in range (a valid subset). Bounds beyond +-1e15 are not supported.
#include <string>

namespace vks::grammar {

struct NumberBounds {
  bool has_min = false, has_max = false;
  bool min_set = false, max_set = false;
  bool min_exclusive = false, max_exclusive = false;
  double min = 0, max = 0;
};

// Throws CompileError when no value fits or the bounds are out of the supported range.
std::string number_range_gbnf(const NumberBounds& bounds, bool integer);

}  // namespace vks::grammar
