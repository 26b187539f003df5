#pragma once
// Human-readable printing of the daemon's maps (stats, model, hello).
#include <ostream>
#include <string>

#include "vkstream/value.h"

namespace vks::cli {

// "key: value" lines, nested maps indented; long numeric arrays are summarised.
void print_value_tree(std::ostream& out, const vkstream::Value& v, int indent = 0);
// A scalar as text (numbers without trailing zeros).
std::string scalar_text(const vkstream::Value& v);

}  // namespace vks::cli
