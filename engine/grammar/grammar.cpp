#include "engine/grammar/grammar.h"

#include <algorithm>

namespace vks::grammar {

namespace {

// Index of the first range whose last >= cp (ranges are sorted and disjoint).
const CodepointRange* first_not_below(const CodepointRange* begin, const CodepointRange* end, uint32_t cp) {
  return std::lower_bound(begin, end, cp, [](const CodepointRange& r, uint32_t v) { return r.last < v; });
}

}  // namespace

bool Grammar::matches(uint32_t pos, uint32_t cp) const {
  const Element& e = elements[pos];
  const CodepointRange* begin = ranges.data() + e.ranges_begin;
  const CodepointRange* end = ranges.data() + e.ranges_end;
  const CodepointRange* it = first_not_below(begin, end, cp);
  const bool inside = it != end && it->first <= cp;
  return inside != e.negated;
}

bool Grammar::matches_any(uint32_t pos, uint32_t lo, uint32_t hi) const {
  const Element& e = elements[pos];
  const CodepointRange* begin = ranges.data() + e.ranges_begin;
  const CodepointRange* end = ranges.data() + e.ranges_end;
  const CodepointRange* it = first_not_below(begin, end, lo);
  if (!e.negated) return it != end && it->first <= hi;
  // Negated: some code point of [lo, hi] lies outside every range. Ranges are non-adjacent, so
  // [lo, hi] is fully covered only when one range contains all of it.
  return !(it != end && it->first <= lo && it->last >= hi);
}

}  // namespace vks::grammar
