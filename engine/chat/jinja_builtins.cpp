#include "engine/chat/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <optional>

#include "engine/chat/jinja_error.h"
#include "engine/chat/jinja_strings.h"

namespace vks::jinja {
namespace {

constexpr int64_t kMaxRange = 1 << 20;

// Argument `index` by position, else by keyword `name`; null when absent.
const Value* arg(const CallArgs& args, size_t index, std::string_view name) {
  if (index < args.positional.size()) return &args.positional[index];
  return args.find_keyword(name);
}

std::optional<std::string> string_arg(const CallArgs& args, size_t index, std::string_view name) {
  const Value* v = arg(args, index, name);
  if (v == nullptr || v->is_none() || v->is_undefined()) return std::nullopt;
  if (!v->is_string()) throw EvalError(std::string(name) + " must be a string, not " + v->type_name());
  return v->as_string();
}

int64_t int_arg(const CallArgs& args, size_t index, std::string_view name, int64_t dflt) {
  const Value* v = arg(args, index, name);
  if (v == nullptr || v->is_none() || v->is_undefined()) return dflt;
  if (!v->is_number()) throw EvalError(std::string(name) + " must be a number, not " + v->type_name());
  return v->as_int();
}

bool bool_arg(const CallArgs& args, size_t index, std::string_view name, bool dflt) {
  const Value* v = arg(args, index, name);
  return v == nullptr || v->is_undefined() ? dflt : v->truthy();
}

const std::string& need_string(const Value& v, std::string_view what) {
  if (!v.is_string()) throw EvalError(std::string(what) + " expects a string, not " + v.type_name());
  return v.as_string();
}

Value make_list_of_strings(std::vector<std::string> items) {
  Value::List list;
  list.reserve(items.size());
  for (auto& s : items) list.push_back(Value::string(std::move(s)));
  return Value::list(std::move(list));
}

Value items_of(const Value& v) {
  if (!v.is_dict()) throw EvalError("items expects a dict, not " + v.type_name());
  Value::List out;
  for (const auto& [key, item] : v.as_dict().entries) out.push_back(Value::list({Value::string(key), item}));
  return Value::list(std::move(out));
}

// Dotted attribute path as used by map/selectattr/sort: "a.b" or "0".
Value lookup_path(const Value& v, const std::string& path, BuiltinHost& host) {
  Value cur = v;
  size_t from = 0;
  for (;;) {
    const size_t dot = path.find('.', from);
    const std::string part = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = numeric && cur.is_list() ? get_item(cur, Value::integer(std::stoll(part.substr(0, 18))))
                                   : get_attribute(cur, part, host);
    if (dot == std::string::npos) return cur;
    from = dot + 1;
  }
}

int compare_values(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    const double x = a.as_double();
    const double y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
  throw EvalError("cannot compare " + a.type_name() + " with " + b.type_name());
}

std::string join_values(const Value& seq, const std::string& sep, const std::optional<std::string>& attribute,
                        BuiltinHost& host) {
  std::string out;
  bool first = true;
  for (const Value& item : iterate(seq)) {
    if (!first) out += sep;
    first = false;
    out += attribute ? lookup_path(item, *attribute, host).to_output() : item.to_output();
    if (out.size() > host.max_bytes()) throw EvalError("join: result too large");
  }
  return out;
}

std::string indent_text(const std::string& s, const std::string& pad, bool first, bool blank) {
  std::string out;
  size_t from = 0;
  bool is_first = true;
  for (;;) {
    const size_t nl = s.find('\n', from);
    const std::string line = s.substr(from, nl == std::string::npos ? std::string::npos : nl - from);
    if ((!is_first || first) && (blank || !line.empty())) out += pad;
    out += line;
    if (nl == std::string::npos) return out;
    out += '\n';
    from = nl + 1;
    is_first = false;
  }
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value select_items(const Value& seq, const CallArgs& args, bool by_attribute, bool keep, BuiltinHost& host) {
  size_t next = 0;
  std::optional<std::string> attribute;
  if (by_attribute) {
    attribute = string_arg(args, next++, "attribute");
    if (!attribute) throw EvalError("selectattr/rejectattr need an attribute name");
  }
  const std::optional<std::string> test = string_arg(args, next++, "test");
  CallArgs test_args;
  for (size_t i = next; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
  Value::List out;
  for (const Value& item : iterate(seq)) {
    host.count_steps(1);
    const Value subject = attribute ? lookup_path(item, *attribute, host) : item;
    const bool pass = test ? apply_test(*test, subject, test_args, host) : subject.truthy();
    if (pass == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value map_items(const Value& seq, const CallArgs& args, BuiltinHost& host) {
  Value::List out;
  const Value* attribute = args.find_keyword("attribute");
  if (attribute != nullptr) {
    const Value* dflt = args.find_keyword("default");
    for (const Value& item : iterate(seq)) {
      Value v = lookup_path(item, need_string(*attribute, "map attribute"), host);
      out.push_back(v.is_undefined() && dflt != nullptr ? *dflt : v);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) throw EvalError("map needs a filter name or attribute=");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  for (const Value& item : iterate(seq)) {
    host.count_steps(1);
    out.push_back(apply_filter(args.positional[0].as_string(), item, rest, host));
  }
  return Value::list(std::move(out));
}

Value sort_items(const Value& seq, const CallArgs& args, BuiltinHost& host) {
  const bool reverse = bool_arg(args, 0, "reverse", false);
  const bool case_sensitive = bool_arg(args, 1, "case_sensitive", false);
  const std::optional<std::string> attribute = string_arg(args, 2, "attribute");
  Value::List items = iterate(seq);
  const auto key = [&](const Value& v) {
    Value k = attribute ? lookup_path(v, *attribute, host) : v;
    if (!case_sensitive && k.is_string()) k = Value::string(str::lower(k.as_string()));
    return k;
  };
  host.count_steps(items.size());
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    const int c = compare_values(key(a), key(b));
    return reverse ? c > 0 : c < 0;
  });
  return Value::list(std::move(items));
}

Value to_number(const Value& v, bool integer, const Value* dflt) {
  if (v.is_number()) return integer ? Value::integer(v.as_int()) : Value::number(v.as_double());
  if (v.is_string()) {
    const std::string s = str::strip(v.as_string(), std::nullopt, true, true);
    char* end = nullptr;
    if (integer) {
      const long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end != nullptr && *end == '\0') return Value::integer(i);
      const double f = std::strtod(s.c_str(), &end);
      if (!s.empty() && end != nullptr && *end == '\0' && std::isfinite(f)) return Value::integer(Value::number(f).as_int());
    } else {
      const double f = std::strtod(s.c_str(), &end);
      if (!s.empty() && end != nullptr && *end == '\0') return Value::number(f);
    }
  }
  if (dflt != nullptr) return *dflt;
  return integer ? Value::integer(0) : Value::number(0.0);
}

Value string_method(const Value& self, const std::string& name, const CallArgs& args, BuiltinHost& host) {
  const std::string& s = self.as_string();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    return Value::string(str::strip(s, string_arg(args, 0, "chars"), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    const int64_t maxsplit = int_arg(args, 1, "maxsplit", -1);
    if (name == "rsplit" && maxsplit >= 0) throw EvalError("rsplit with maxsplit is not supported");
    return make_list_of_strings(str::split(s, string_arg(args, 0, "sep"), maxsplit));
  }
  if (name == "startswith" || name == "endswith") {
    const Value* what = arg(args, 0, "prefix");
    if (what == nullptr) throw EvalError(name + " needs an argument");
    const auto check = [&](const Value& v) {
      const std::string& p = need_string(v, name);
      if (p.size() > s.size()) return false;
      return name == "startswith" ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
    };
    if (what->is_list()) {
      for (const Value& v : what->as_list()) {
        if (check(v)) return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    return Value::boolean(check(*what));
  }
  if (name == "upper") return Value::string(str::upper(s));
  if (name == "lower") return Value::string(str::lower(s));
  if (name == "title") return Value::string(str::title(s));
  if (name == "capitalize") return Value::string(str::capitalize(s));
  if (name == "replace") {
    const auto from = string_arg(args, 0, "old");
    const auto to = string_arg(args, 1, "new");
    if (!from || !to) throw EvalError("replace needs two strings");
    return Value::string(str::replace(s, *from, *to, int_arg(args, 2, "count", -1), host.max_bytes()));
  }
  if (name == "find" || name == "count") {
    const auto needle = string_arg(args, 0, "sub");
    if (!needle) throw EvalError(name + " needs a string");
    if (name == "find") {
      const size_t hit = s.find(*needle);
      return Value::integer(hit == std::string::npos ? -1 : static_cast<int64_t>(str::length(std::string_view(s).substr(0, hit))));
    }
    if (needle->empty()) return Value::integer(static_cast<int64_t>(str::length(s)) + 1);
    int64_t n = 0;
    for (size_t p = s.find(*needle); p != std::string::npos; p = s.find(*needle, p + needle->size())) ++n;
    return Value::integer(n);
  }
  if (name == "join") {
    const Value* seq = arg(args, 0, "iterable");
    if (seq == nullptr) throw EvalError("join needs an iterable");
    return Value::string(join_values(*seq, s, std::nullopt, host));
  }
  if (name == "splitlines") {
    std::vector<std::string> lines = str::split(s, std::string("\n"), -1);
    if (!lines.empty() && lines.back().empty()) lines.pop_back();
    for (auto& l : lines) {
      if (!l.empty() && l.back() == '\r') l.pop_back();
    }
    return make_list_of_strings(std::move(lines));
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum") {
    if (s.empty()) return Value::boolean(false);
    return Value::boolean(std::all_of(s.begin(), s.end(), [&](char c) {
      const auto u = static_cast<unsigned char>(c);
      if (name == "isdigit") return std::isdigit(u) != 0;
      if (name == "isalpha") return std::isalpha(u) != 0;
      if (name == "isalnum") return std::isalnum(u) != 0;
      return std::isspace(u) != 0;
    }));
  }
  throw EvalError("string has no method '" + name + "'");
}

bool is_string_method(const std::string& n) {
  static const char* const kNames[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith",
                                       "upper", "lower", "title", "capitalize", "replace", "find", "count",
                                       "join", "splitlines", "isdigit", "isalpha", "isspace", "isalnum"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

Value list_method(const Value& self, const std::string& name, const CallArgs& args, BuiltinHost& host) {
  Value::List& list = self.as_list();
  if (name == "append") {
    if (args.positional.size() != 1) throw EvalError("append takes one argument");
    if (list.size() >= host.max_bytes()) throw EvalError("list too large");
    list.push_back(args.positional[0]);
    return Value::none();
  }
  if (name == "extend") {
    if (args.positional.size() != 1) throw EvalError("extend takes one argument");
    Value::List more = iterate(args.positional[0]);
    if (list.size() + more.size() > host.max_bytes()) throw EvalError("list too large");
    list.insert(list.end(), more.begin(), more.end());
    return Value::none();
  }
  if (name == "pop") {
    if (list.empty()) throw EvalError("pop from empty list");
    int64_t i = int_arg(args, 0, "index", -1);
    if (i < 0) i += static_cast<int64_t>(list.size());
    if (i < 0 || i >= static_cast<int64_t>(list.size())) throw EvalError("pop index out of range");
    Value v = list[static_cast<size_t>(i)];
    list.erase(list.begin() + i);
    return v;
  }
  if (name == "index" || name == "count") {
    if (args.positional.size() != 1) throw EvalError(name + " takes one argument");
    int64_t n = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      if (values_equal(list[i], args.positional[0])) {
        if (name == "index") return Value::integer(static_cast<int64_t>(i));
        ++n;
      }
    }
    if (name == "index") throw EvalError("value is not in list");
    return Value::integer(n);
  }
  throw EvalError("list has no method '" + name + "'");
}

Value dict_method(const Value& self, const std::string& name, const CallArgs& args) {
  const Value::Dict& d = self.as_dict();
  if (name == "items") return items_of(self);
  if (name == "keys" || name == "values") {
    Value::List out;
    for (const auto& [k, v] : d.entries) out.push_back(name == "keys" ? Value::string(k) : v);
    return Value::list(std::move(out));
  }
  if (name == "get") {
    const Value* key = arg(args, 0, "key");
    if (key == nullptr) throw EvalError("get needs a key");
    const Value* found = key->is_string() ? d.find(key->as_string()) : nullptr;
    if (found != nullptr) return *found;
    const Value* dflt = arg(args, 1, "default");
    return dflt != nullptr ? *dflt : Value::none();
  }
  throw EvalError("dict has no method '" + name + "'");
}

}  // namespace

Value::List iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kList: return value.as_list();
    case Value::Kind::kDict: {
      Value::List keys;
      for (const auto& [k, v] : value.as_dict().entries) keys.push_back(Value::string(k));
      return keys;
    }
    case Value::Kind::kString: {
      Value::List chars;
      const std::string& s = value.as_string();
      const std::vector<size_t> off = str::code_point_offsets(s);
      for (size_t i = 0; i + 1 < off.size(); ++i) chars.push_back(Value::string(s.substr(off[i], off[i + 1] - off[i])));
      return chars;
    }
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return {};
    default: throw EvalError(value.type_name() + " is not iterable");
  }
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_dict()) {
    if (!key.is_string()) return Value();
    const Value* found = object.as_dict().find(key.as_string());
    return found != nullptr ? *found : Value();
  }
  if (object.is_list() && key.is_number()) {
    const auto& list = object.as_list();
    int64_t i = key.as_int();
    if (i < 0) i += static_cast<int64_t>(list.size());
    if (i < 0 || i >= static_cast<int64_t>(list.size())) return Value();
    return list[static_cast<size_t>(i)];
  }
  if (object.is_string() && key.is_number()) {
    auto ch = str::at(object.as_string(), key.as_int());
    return ch ? Value::string(std::move(*ch)) : Value();
  }
  return Value();
}

Value get_attribute(const Value& object, const std::string& name, BuiltinHost& host) {
  if (object.is_dict()) {
    const Value* found = object.as_dict().find(name);
    if (found != nullptr) return *found;
    if (name == "items" || name == "keys" || name == "values" || name == "get") {
      return Value::callable(name, [object, name](const CallArgs& args) { return dict_method(object, name, args); });
    }
    return Value();
  }
  if (object.is_string() && is_string_method(name)) {
    return Value::callable(name, [object, name, &host](const CallArgs& args) {
      return string_method(object, name, args, host);
    });
  }
  if (object.is_list() && (name == "append" || name == "extend" || name == "pop" || name == "index" || name == "count")) {
    return Value::callable(name, [object, name, &host](const CallArgs& args) {
      return list_method(object, name, args, host);
    });
  }
  return Value();
}

Value apply_filter(std::string_view name, const Value& v, const CallArgs& args, BuiltinHost& host) {
  if (name == "trim") return Value::string(str::strip(need_string(v, "trim"), string_arg(args, 0, "chars"), true, true));
  if (name == "tojson") {
    const std::string out = to_json(v, static_cast<int>(std::clamp<int64_t>(int_arg(args, 0, "indent", -1), -1, 64)));
    if (out.size() > host.max_bytes()) throw EvalError("tojson: result too large");
    return Value::string(out);
  }
  if (name == "length" || name == "count") {
    if (v.is_string()) return Value::integer(static_cast<int64_t>(str::length(v.as_string())));
    if (v.is_list()) return Value::integer(static_cast<int64_t>(v.as_list().size()));
    if (v.is_dict()) return Value::integer(static_cast<int64_t>(v.as_dict().entries.size()));
    if (v.is_undefined()) return Value::integer(0);
    throw EvalError("length of " + v.type_name());
  }
  if (name == "items") return v.is_undefined() ? Value::list() : items_of(v);
  if (name == "upper") return Value::string(str::upper(v.to_output()));
  if (name == "lower") return Value::string(str::lower(v.to_output()));
  if (name == "capitalize") return Value::string(str::capitalize(v.to_output()));
  if (name == "title") return Value::string(str::title(v.to_output()));
  if (name == "string") return Value::string(v.to_output());
  if (name == "safe") return v;
  if (name == "e" || name == "escape") return Value::string(html_escape(v.to_output()));
  if (name == "default" || name == "d") {
    const Value* dflt = arg(args, 0, "default_value");
    const bool boolean = bool_arg(args, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return dflt != nullptr ? *dflt : Value::string("");
    return v;
  }
  if (name == "first" || name == "last") {
    const Value::List items = iterate(v);
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    return Value::string(join_values(v, string_arg(args, 0, "d").value_or(""), string_arg(args, 1, "attribute"), host));
  }
  if (name == "list") return Value::list(iterate(v));
  if (name == "int") return to_number(v, true, arg(args, 0, "default"));
  if (name == "float") return to_number(v, false, arg(args, 0, "default"));
  if (name == "abs") {
    if (v.kind() == Value::Kind::kFloat) return Value::number(std::fabs(v.as_double()));
    if (!v.is_number()) throw EvalError("abs of " + v.type_name());
    const int64_t i = v.as_int();
    return i == INT64_MIN ? Value::number(9.223372036854775808e18) : Value::integer(i < 0 ? -i : i);
  }
  if (name == "round") {
    if (!v.is_number()) throw EvalError("round of " + v.type_name());
    const double scale = std::pow(10.0, static_cast<double>(std::clamp<int64_t>(int_arg(args, 0, "precision", 0), -20, 20)));
    const std::string method = string_arg(args, 1, "method").value_or("common");
    double x = v.as_double() * scale;
    x = method == "floor" ? std::floor(x) : method == "ceil" ? std::ceil(x) : std::round(x);
    return Value::number(x / scale);
  }
  if (name == "replace") {
    const auto from = string_arg(args, 0, "old");
    const auto to = string_arg(args, 1, "new");
    if (!from || !to) throw EvalError("replace needs two strings");
    return Value::string(str::replace(v.to_output(), *from, *to, int_arg(args, 2, "count", -1), host.max_bytes()));
  }
  if (name == "reverse") {
    if (v.is_string()) return Value::string(str::slice(v.as_string(), std::nullopt, std::nullopt, -1));
    Value::List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "unique") {
    Value::List out;
    for (const Value& item : iterate(v)) {
      host.count_steps(out.size() + 1);
      if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return values_equal(o, item); })) out.push_back(item);
    }
    return Value::list(std::move(out));
  }
  if (name == "indent") {
    const Value* width = arg(args, 0, "width");
    std::string pad = width != nullptr && width->is_string() ? width->as_string()
                                                              : std::string(static_cast<size_t>(std::clamp<int64_t>(int_arg(args, 0, "width", 4), 0, 256)), ' ');
    const std::string out = indent_text(v.to_output(), pad, bool_arg(args, 1, "first", false), bool_arg(args, 2, "blank", false));
    if (out.size() > host.max_bytes()) throw EvalError("indent: result too large");
    return Value::string(out);
  }
  if (name == "select" || name == "reject") return select_items(v, args, false, name == "select", host);
  if (name == "selectattr" || name == "rejectattr") return select_items(v, args, true, name == "selectattr", host);
  if (name == "map") return map_items(v, args, host);
  if (name == "sort") return sort_items(v, args, host);
  if (name == "dictsort") {
    Value::List items = items_of(v).as_list();
    std::stable_sort(items.begin(), items.end(), [](const Value& a, const Value& b) {
      return a.as_list()[0].as_string() < b.as_list()[0].as_string();
    });
    return Value::list(std::move(items));
  }
  if (name == "sum") {
    Value total = Value::integer(0);
    for (const Value& item : iterate(v)) {
      if (!item.is_number()) throw EvalError("sum of " + item.type_name());
      total = total.kind() == Value::Kind::kFloat || item.kind() == Value::Kind::kFloat
                  ? Value::number(total.as_double() + item.as_double())
                  : Value::integer(static_cast<int64_t>(static_cast<uint64_t>(total.as_int()) + static_cast<uint64_t>(item.as_int())));
    }
    return total;
  }
  if (name == "min" || name == "max") {
    const Value::List items = iterate(v);
    if (items.empty()) return Value();
    Value best = items[0];
    for (const Value& item : items) {
      const int c = compare_values(item, best);
      if (name == "min" ? c < 0 : c > 0) best = item;
    }
    return best;
  }
  if (name == "wordcount") return Value::integer(static_cast<int64_t>(str::split(v.to_output(), std::nullopt, -1).size()));
  throw EvalError("unknown filter '" + std::string(name) + "'");
}

bool apply_test(std::string_view name, const Value& v, const CallArgs& args, BuiltinHost& host) {
  const auto other = [&]() -> const Value& {
    if (args.positional.empty()) throw EvalError("test '" + std::string(name) + "' needs an argument");
    return args.positional[0];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == Value::Kind::kInt;
  if (name == "float") return v.kind() == Value::Kind::kFloat;
  if (name == "boolean") return v.kind() == Value::Kind::kBool;
  if (name == "true") return v.kind() == Value::Kind::kBool && v.as_bool();
  if (name == "false") return v.kind() == Value::Kind::kBool && !v.as_bool();
  if (name == "mapping") return v.is_dict();
  if (name == "sequence") return v.is_list() || v.is_string() || v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_string() || v.is_dict();
  if (name == "callable") return v.is_callable();
  if (name == "lower") return v.is_string() && str::lower(v.as_string()) == v.as_string();
  if (name == "upper") return v.is_string() && str::upper(v.as_string()) == v.as_string();
  if (name == "odd" || name == "even") {
    if (!v.is_number()) throw EvalError("test '" + std::string(name) + "' needs a number");
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const int64_t d = other().as_int();
    if (d == 0) throw EvalError("divisibleby 0");
    return d == -1 || v.as_int() % d == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return values_equal(v, other());
  if (name == "ne" || name == "!=") return !values_equal(v, other());
  if (name == "sameas") {
    const Value& o = other();
    if (v.kind() != o.kind()) return false;
    if (v.is_list()) return &v.as_list() == &o.as_list();
    if (v.is_dict()) return &v.as_dict() == &o.as_dict();
    return values_equal(v, o);
  }
  if (name == "lt" || name == "<") return compare_values(v, other()) < 0;
  if (name == "le" || name == "<=") return compare_values(v, other()) <= 0;
  if (name == "gt" || name == ">") return compare_values(v, other()) > 0;
  if (name == "ge" || name == ">=") return compare_values(v, other()) >= 0;
  if (name == "in") {
    const Value& seq = other();
    if (seq.is_string()) return v.is_string() && seq.as_string().find(v.as_string()) != std::string::npos;
    for (const Value& item : iterate(seq)) {
      host.count_steps(1);
      if (values_equal(item, v)) return true;
    }
    return false;
  }
  throw EvalError("unknown test '" + std::string(name) + "'");
}

void add_global_functions(Value::Dict& globals, BuiltinHost& host) {
  globals.set("range", Value::callable("range", [&host](const CallArgs& args) {
    int64_t start = 0;
    int64_t stop = 0;
    int64_t step = 1;
    const auto& p = args.positional;
    if (p.empty() || p.size() > 3) throw EvalError("range takes 1 to 3 arguments");
    for (const Value& x : p) {
      if (!x.is_number()) throw EvalError("range arguments must be integers");
    }
    if (p.size() == 1) {
      stop = p[0].as_int();
    } else {
      start = p[0].as_int();
      stop = p[1].as_int();
      if (p.size() == 3) step = p[2].as_int();
    }
    if (step == 0) throw EvalError("range step cannot be zero");
    Value::List out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (static_cast<int64_t>(out.size()) >= kMaxRange) throw EvalError("range too large");
      out.push_back(Value::integer(i));
      host.count_steps(1);
      if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
    }
    return Value::list(std::move(out));
  }));
  const auto make_dict = [](const CallArgs& args, bool is_namespace) {
    Value::Dict d;
    d.is_namespace = is_namespace;
    for (const Value& p : args.positional) {
      if (!p.is_dict()) throw EvalError("expected a dict argument");
      for (const auto& [k, v] : p.as_dict().entries) d.set(k, v);
    }
    for (const auto& [k, v] : args.keyword) d.set(k, v);
    return Value::dict(std::move(d));
  };
  globals.set("namespace", Value::callable("namespace", [make_dict](const CallArgs& args) { return make_dict(args, true); }));
  globals.set("dict", Value::callable("dict", [make_dict](const CallArgs& args) { return make_dict(args, false); }));
  globals.set("raise_exception", Value::callable("raise_exception", [](const CallArgs& args) -> Value {
    const std::string message = args.positional.empty() ? "raise_exception called" : args.positional[0].to_output();
    throw EvalError(message);
  }));
  globals.set("strftime_now", Value::callable("strftime_now", [](const CallArgs& args) {
    const auto format = string_arg(args, 0, "format");
    if (!format || format->size() > 256) throw EvalError("strftime_now needs a short format string");
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[512];
    const size_t n = std::strftime(buf, sizeof buf, format->c_str(), &tm);
    return Value::string(std::string(buf, n));
  }));
}

}  // namespace vks::jinja
