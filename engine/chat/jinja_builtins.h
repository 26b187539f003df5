#pragma once
// Filters, tests, attribute access (including Python string/list/dict methods) and global
// functions of the interpreter. Errors are thrown as EvalError; the evaluator adds the line.
#include <string>
#include <string_view>

#include "engine/chat/jinja_value.h"

namespace vks::jinja {

// What builtins need from the running evaluator: calling template callables (macros, in map or
// select), and the render limits.
class BuiltinHost {
 public:
  virtual ~BuiltinHost() = default;
  virtual Value call(const Value& callable, const CallArgs& args) = 0;
  virtual size_t max_bytes() const = 0;  // largest string or list a builtin may build
  virtual void count_steps(size_t steps) = 0;
};

Value apply_filter(std::string_view name, const Value& subject, const CallArgs& args, BuiltinHost& host);
bool apply_test(std::string_view name, const Value& subject, const CallArgs& args, BuiltinHost& host);

// object.name: a dict entry, else a bound method of a string, list or dict, else undefined.
Value get_attribute(const Value& object, const std::string& name, BuiltinHost& host);
// object[key]: dict entry, list or string element (negative indexes count from the end).
Value get_item(const Value& object, const Value& key);

// range, namespace, dict, raise_exception, strftime_now, into a globals dict.
void add_global_functions(Value::Dict& globals, BuiltinHost& host);

// Items of an iterable as a for loop sees them: list items, dict keys, string characters.
Value::List iterate(const Value& value);

}  // namespace vks::jinja
