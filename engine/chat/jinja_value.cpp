#include "engine/chat/jinja_value.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "engine/chat/jinja_budget.h"

namespace vks::jinja {

const Value* CallArgs::find_keyword(std::string_view name) const {
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

const Value* Value::Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Value::Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  budget::charge_bytes(sizeof(entries.front()) + key.size());
  entries.emplace_back(key, std::move(value));
}

struct Value::NamedCallable {
  std::string name;
  Callable fn;
};

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}
Value Value::number(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}
// Allocation overhead of one shared object (control block and heap header), roughly.
constexpr size_t kSharedOverhead = 48;

Value Value::string(std::string s) {
  budget::check_string(s.size());
  budget::charge_bytes(s.size() + kSharedOverhead);
  Value v;
  v.kind_ = Kind::kString;
  v.ptr_ = std::make_shared<std::string>(std::move(s));
  return v;
}
Value Value::list() { return list(List{}); }
Value Value::dict() { return dict(Dict{}); }
Value Value::list(List items) {
  budget::charge_bytes(items.size() * sizeof(Value) + kSharedOverhead);
  Value v;
  v.kind_ = Kind::kList;
  v.ptr_ = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::dict(Dict d) {
  size_t bytes = kSharedOverhead + d.entries.size() * sizeof(d.entries.front());
  for (const auto& [key, value] : d.entries) bytes += key.size();
  budget::charge_bytes(bytes);
  Value v;
  v.kind_ = Kind::kDict;
  v.ptr_ = std::make_shared<Dict>(std::move(d));
  return v;
}
Value Value::callable(std::string name, Callable fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.ptr_ = std::make_shared<NamedCallable>(NamedCallable{std::move(name), std::move(fn)});
  return v;
}

const std::string& Value::as_string() const {
  static const std::string kEmpty;
  if (kind_ == Kind::kString) return *static_cast<const std::string*>(ptr_.get());
  if (kind_ == Kind::kCallable) return static_cast<const NamedCallable*>(ptr_.get())->name;
  return kEmpty;
}

const Callable& Value::as_callable() const { return static_cast<const NamedCallable*>(ptr_.get())->fn; }

int64_t Value::as_int() const {
  switch (kind_) {
    case Kind::kBool: return b_ ? 1 : 0;
    case Kind::kInt: return i_;
    case Kind::kFloat:
      if (!std::isfinite(f_) || std::fabs(f_) > 9.2e18) return 0;
      return static_cast<int64_t>(f_);
    default: return 0;
  }
}

double Value::as_double() const {
  switch (kind_) {
    case Kind::kBool: return b_ ? 1 : 0;
    case Kind::kInt: return static_cast<double>(i_);
    case Kind::kFloat: return f_;
    default: return 0;
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0;
    case Kind::kString: return !as_string().empty();
    case Kind::kList: return !as_list().empty();
    case Kind::kDict: return !as_dict().entries.empty();
    case Kind::kCallable: return true;
  }
  return false;
}

std::string format_float(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, f);
    if (std::strtod(buf, nullptr) == f) break;
  }
  std::string out = buf;
  if (out.find_first_of(".en") == std::string::npos) out += ".0";
  return out;
}

namespace {

constexpr int kMaxReprDepth = 64;

std::string quote_python(const std::string& s) {
  // Python prefers single quotes unless the string holds one and no double quote.
  const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = use_double ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  out += q;
  return out;
}

std::string repr_at(const Value& v, int depth, bool top);

// A list holding the same big list a thousand times is small, but prints enormous: printing
// counts a step per item and stops at the size limit instead of building the text first.
void charge_printed(const std::string& out) {
  budget::charge_steps(1);
  budget::check_string(out.size());
}

std::string container_repr(const Value& v, int depth) {
  if (depth > kMaxReprDepth) return v.is_list() ? "[...]" : "{...}";
  std::string out;
  if (v.is_list()) {
    out = "[";
    bool first = true;
    for (const auto& item : v.as_list()) {
      if (!first) out += ", ";
      first = false;
      out += repr_at(item, depth + 1, false);
      charge_printed(out);
    }
    return out + "]";
  }
  out = "{";
  bool first = true;
  for (const auto& [key, item] : v.as_dict().entries) {
    if (!first) out += ", ";
    first = false;
    out += quote_python(key) + ": " + repr_at(item, depth + 1, false);
    charge_printed(out);
  }
  return out + "}";
}

std::string repr_at(const Value& v, int depth, bool top) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return top ? "" : "None";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return format_float(v.as_double());
    case Value::Kind::kString: return top ? v.as_string() : quote_python(v.as_string());
    case Value::Kind::kList:
    case Value::Kind::kDict: return container_repr(v, depth);
    case Value::Kind::kCallable: return "<function " + v.callable_name() + ">";
  }
  return "";
}

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_at(const Value& v, int indent, int depth, int depth_limit, std::string& out) {
  const auto newline = [&](int level) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(level), ' ');
  };
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
    case Value::Kind::kCallable: out += "null"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: {
      const double f = v.as_double();
      out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f > 0 ? "Infinity" : "-Infinity") : format_float(f);
      return;
    }
    case Value::Kind::kString: json_string(v.as_string(), out); return;
    case Value::Kind::kList:
    case Value::Kind::kDict: break;
  }
  if (depth >= depth_limit) {
    out += "null";  // cyclic or absurdly deep: cut instead of recursing without end
    return;
  }
  const bool is_list = v.is_list();
  const size_t count = is_list ? v.as_list().size() : v.as_dict().entries.size();
  out += is_list ? '[' : '{';
  if (count == 0) {
    out += is_list ? ']' : '}';
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) out += indent >= 0 ? "," : ", ";
    if (indent >= 0) newline(depth + 1);
    if (is_list) {
      json_at(v.as_list()[i], indent, depth + 1, depth_limit, out);
    } else {
      const auto& [key, item] = v.as_dict().entries[i];
      json_string(key, out);
      out += ": ";
      json_at(item, indent, depth + 1, depth_limit, out);
    }
    charge_printed(out);
  }
  if (indent >= 0) newline(depth);
  out += is_list ? ']' : '}';
}

}  // namespace

std::string Value::to_output() const { return repr_at(*this, 0, true); }
std::string Value::to_repr() const { return repr_at(*this, 0, false); }

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "none";
    case Kind::kBool: return "boolean";
    case Kind::kInt: return "integer";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kCallable: return "function";
  }
  return "?";
}

namespace {

constexpr int kMaxCompareDepth = 64;

bool equal_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxCompareDepth) return false;  // cyclic containers: stop instead of recursing forever
  budget::charge_steps(1);  // shared nested lists compare in time exponential in their depth
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      if (&a.as_list() == &b.as_list()) return true;
      if (a.as_list().size() != b.as_list().size()) return false;
      for (size_t i = 0; i < a.as_list().size(); ++i) {
        if (!equal_at(a.as_list()[i], b.as_list()[i], depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (&a.as_dict() == &b.as_dict()) return true;
      const auto& ea = a.as_dict().entries;
      if (ea.size() != b.as_dict().entries.size()) return false;
      for (const auto& [key, item] : ea) {
        const Value* other = b.as_dict().find(key);
        if (other == nullptr || !equal_at(item, *other, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable: return &a.as_callable() == &b.as_callable();
    default: return false;
  }
}

}  // namespace

bool values_equal(const Value& a, const Value& b) { return equal_at(a, b, 0); }

std::string to_json(const Value& value, int indent, int depth_limit) {
  std::string out;
  json_at(value, indent, 0, depth_limit, out);
  return out;
}

}  // namespace vks::jinja
