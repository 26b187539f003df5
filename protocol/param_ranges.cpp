#include "protocol/param_ranges.h"

#include <cmath>
#include <cstdio>

namespace vks::proto {
namespace {

std::string number(double v) {
  if (v == static_cast<double>(1 << 20)) return "2^20";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

// Built with append: GCC 12's -Wrestrict misfires on chains of operator+ with short literals.
std::string ParamRange::describe() const {
  std::string out;
  if (min_exclusive) {
    out.append("(").append(number(min)).append(", ").append(number(max)).append("]");
  } else {
    out.append(number(min)).append("..").append(number(max));
  }
  return out;
}

std::string ParamRange::violation(std::string_view got) const {
  std::string m("must be in ");
  m.append(describe());
  if (!got.empty()) m.append(", got ").append(got);
  return m;
}

}  // namespace vks::proto
