#pragma once
// Values of the Jinja interpreter. Lists, dicts and callables are shared by reference (as in
// Python), so `namespace` objects and list.append behave like jinja2. Strings are immutable and
// shared too, so copying any value never allocates: a template that puts one 16 MiB string in a
// list a thousand times holds one string, and all real allocation happens in the constructors
// below, where the render's budget (jinja_budget.h) is charged.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace vks::jinja {

class Value;

// Arguments of a call: positional values, then keyword values in call order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* find_keyword(std::string_view name) const;
};

using Callable = std::function<Value(const CallArgs& args)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };
  using List = std::vector<Value>;
  // Insertion-ordered dict (templates and tojson rely on the order of the input JSON).
  struct Dict {
    std::vector<std::pair<std::string, Value>> entries;
    bool is_namespace = false;  // only namespace() objects accept `set ns.attr = ...`
    const Value* find(std::string_view key) const;
    void set(const std::string& key, Value value);
  };

  Value() = default;  // undefined
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list();
  static Value list(List items);
  static Value dict();
  static Value dict(Dict d);
  static Value callable(std::string name, Callable fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return kind_ == Kind::kBool && b_; }
  int64_t as_int() const;     // bool, int or float (truncated)
  double as_double() const;   // bool, int or float
  const std::string& as_string() const;  // empty unless a string (or a callable: its name)
  List& as_list() const { return *static_cast<List*>(ptr_.get()); }
  Dict& as_dict() const { return *static_cast<Dict*>(ptr_.get()); }
  const Callable& as_callable() const;
  const std::string& callable_name() const { return as_string(); }

  bool truthy() const;
  // Text as `{{ value }}` prints it (Python str(): True, None, ['a', 1], {'k': 'v'}).
  std::string to_output() const;
  // Python repr() (strings quoted), used inside list and dict output.
  std::string to_repr() const;
  std::string type_name() const;

 private:
  struct NamedCallable;

  Kind kind_ = Kind::kUndefined;
  union {
    bool b_;
    int64_t i_ = 0;
    double f_;
  };
  // The string, List, Dict or NamedCallable, by kind_ (one pointer keeps a value at 32 bytes,
  // which matters as lists are bounded by the bytes of their values).
  std::shared_ptr<void> ptr_;
};

// Python-style equality (1 == 1.0, deep for lists and dicts).
bool values_equal(const Value& a, const Value& b);

// Python's json.dumps(value, ensure_ascii=False, indent=indent) (indent < 0: no indent), as
// transformers' tojson filter produces it.
std::string to_json(const Value& value, int indent = -1, int depth_limit = 64);

// Python's repr() of a float (shortest round-trip, always with a '.' or exponent).
std::string format_float(double f);

}  // namespace vks::jinja
