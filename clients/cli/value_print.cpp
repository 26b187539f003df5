#include "clients/cli/value_print.h"

#include <cstdio>

namespace vks::cli {

std::string scalar_text(const vkstream::Value& v) {
  if (const std::string* s = v.as_string()) return *s;
  if (auto b = v.as_bool()) return *b ? "true" : "false";
  if (auto i = v.as_int()) return std::to_string(*i);
  if (auto d = v.as_double()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", *d);
    return buf;
  }
  if (v.is_nil()) return "-";
  return v.to_json();
}

void print_value_tree(std::ostream& out, const vkstream::Value& v, int indent) {
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  const vkstream::Value::Map* m = v.as_map();
  if (m == nullptr) {
    out << pad << scalar_text(v) << '\n';
    return;
  }
  for (const auto& [key, val] : *m) {
    if (indent == 0 && (key == "type" || key == "tag")) continue;
    if (val.is_map()) {
      out << pad << key << ":\n";
      print_value_tree(out, val, indent + 1);
    } else if (const vkstream::Value::Array* a = val.as_array()) {
      if (a->size() > 12) {
        out << pad << key << ": [" << a->size() << " values]\n";
      } else {
        out << pad << key << ": [";
        for (size_t i = 0; i < a->size(); ++i) out << (i ? ", " : "") << scalar_text((*a)[i]);
        out << "]\n";
      }
    } else {
      out << pad << key << ": " << scalar_text(val) << '\n';
    }
  }
}

}  // namespace vks::cli
