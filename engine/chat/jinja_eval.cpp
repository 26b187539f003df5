// Tree-walking evaluator of parsed templates, with jinja2's scoping: a for loop body and a macro
// call get their own scope; `if` does not; namespace() objects carry state out of loops.
#include <cmath>
#include <limits>
#include <optional>

#include "engine/chat/jinja_budget.h"
#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_parser.h"
#include "engine/chat/jinja_strings.h"
#include "engine/chat/jinja_template.h"

namespace vks::jinja {
namespace {

using Scope = std::vector<std::pair<std::string, Value>>;

std::vector<int64_t> slice_indices(int64_t len, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   std::optional<int64_t> step) {
  const int64_t st = step.value_or(1);
  if (st == 0) throw EvalError("slice step cannot be zero");
  const auto clamp = [&](std::optional<int64_t> v, int64_t dflt, int64_t lo, int64_t hi) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + len : *v;
    return x < lo ? lo : x > hi ? hi : x;
  };
  std::vector<int64_t> out;
  if (st > 0) {
    const int64_t b = clamp(stop, len, 0, len);
    for (int64_t i = clamp(start, 0, 0, len); i < b; i += st) {
      out.push_back(i);
      if (b - i <= st) break;
    }
  } else {
    const int64_t b = clamp(stop, -1, -1, len - 1);
    for (int64_t i = clamp(start, len - 1, -1, len - 1); i > b; i += st) {
      out.push_back(i);
      if (i - b <= -st) break;
    }
  }
  return out;
}

class Evaluator final : public BuiltinHost {
 public:
  Evaluator(const RenderLimits& limits, const Value::Dict& variables) : limits_(limits), budget_(limits) {
    Value::Dict globals;
    add_global_functions(globals, *this);
    for (const auto& [k, v] : variables.entries) globals.set(k, v);
    scopes_.emplace_back(std::move(globals.entries));
  }

  std::string run(const Body& body) {
    std::string out;
    const BudgetScope metered(budget_);
    try {
      exec_body(body, out);
    } catch (const EvalError& e) {
      throw TemplateError(line_, e.what());
    }
    return out;
  }

  Value call(const Value& callable, const CallArgs& args) override {
    if (!callable.is_callable()) throw EvalError(callable.type_name() + " is not callable");
    return callable.as_callable()(args);
  }
  size_t max_bytes() const override { return limits_.max_output_bytes; }
  void count_steps(size_t n) override { budget_.charge_steps(n); }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  const Value* lookup(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      for (const auto& [k, v] : *scope) {
        if (k == name) return &v;
      }
    }
    return nullptr;
  }

  void assign(const std::string& name, Value value) {
    for (auto& [k, v] : scopes_.back()) {
      if (k == name) {
        v = std::move(value);
        return;
      }
    }
    scopes_.back().emplace_back(name, std::move(value));
  }

  void emit(std::string& out, const std::string& text) {
    out += text;
    if (out.size() > limits_.max_output_bytes) throw EvalError("template output exceeds its size limit");
  }

  Flow exec_body(const Body& body, std::string& out) {
    for (const auto& stmt : body) {
      const Flow flow = exec(*stmt, out);
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Flow exec(const Stmt& s, std::string& out) {
    line_ = s.line;
    count_steps(1);
    switch (s.kind) {
      case Stmt::Kind::kText: emit(out, s.text); return Flow::kNormal;
      case Stmt::Kind::kOutput: emit(out, eval(*s.expr).to_output()); return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (const auto& branch : s.branches) {
          if (eval(*branch.condition).truthy()) return exec_body(branch.body, out);
        }
        return exec_body(s.else_body, out);
      case Stmt::Kind::kFor: return exec_for(s, out);
      case Stmt::Kind::kSet: exec_set(s); return Flow::kNormal;
      case Stmt::Kind::kSetBlock: {
        std::string captured;
        exec_body(s.body, captured);
        assign(s.name, Value::string(std::move(captured)));
        return Flow::kNormal;
      }
      case Stmt::Kind::kMacro: define_macro(s); return Flow::kNormal;
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
      case Stmt::Kind::kFilterBlock: {
        std::string captured;
        exec_body(s.body, captured);
        emit(out, filter_chain(*s.expr, Value::string(std::move(captured))).to_output());
        return Flow::kNormal;
      }
    }
    return Flow::kNormal;
  }

  Value filter_chain(const Expr& e, Value input) {
    if (e.kind != Expr::Kind::kFilter) return input;
    Value subject = filter_chain(*e.children[0], std::move(input));
    return apply_filter(e.name, subject, eval_args(e), *this);
  }

  void bind_loop_names(const std::vector<std::string>& names, const Value& item, Scope& scope) {
    if (names.size() == 1) {
      scope.emplace_back(names[0], item);
      return;
    }
    const Value::List parts = iterate(item);
    if (parts.size() != names.size()) {
      throw EvalError("cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(names.size()) + " names");
    }
    for (size_t i = 0; i < names.size(); ++i) scope.emplace_back(names[i], parts[i]);
  }

  Flow exec_for(const Stmt& s, std::string& out) {
    Value::List items = iterate(eval(*s.expr));
    if (s.condition) {
      Value::List kept;
      for (const Value& item : items) {
        Scope scope;
        bind_loop_names(s.names, item, scope);
        scopes_.push_back(std::move(scope));
        const bool keep = eval(*s.condition).truthy();
        scopes_.pop_back();
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec_body(s.else_body, out);
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      count_steps(1);
      Scope scope;
      scope.emplace_back("loop", loop_object(items, i));
      bind_loop_names(s.names, items[static_cast<size_t>(i)], scope);
      scopes_.push_back(std::move(scope));
      const Flow flow = exec_body(s.body, out);
      scopes_.pop_back();
      if (flow == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  // The `loop` variable of iteration i. Not charged to the render's memory: it is freed after the
  // iteration, and the steps bound how many there are.
  static Value loop_object(const Value::List& items, int64_t i) {
    const UnchargedScope bookkeeping;
    const auto n = static_cast<int64_t>(items.size());
    Value::Dict loop;
    loop.set("index0", Value::integer(i));
    loop.set("index", Value::integer(i + 1));
    loop.set("revindex0", Value::integer(n - i - 1));
    loop.set("revindex", Value::integer(n - i));
    loop.set("first", Value::boolean(i == 0));
    loop.set("last", Value::boolean(i == n - 1));
    loop.set("length", Value::integer(n));
    loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value());
    loop.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value());
    loop.set("cycle", Value::callable("cycle", [i](const CallArgs& args) {
      if (args.positional.empty()) throw EvalError("loop.cycle needs arguments");
      return args.positional[static_cast<size_t>(i) % args.positional.size()];
    }));
    return Value::dict(std::move(loop));
  }

  void exec_set(const Stmt& s) {
    Value value = eval(*s.expr);
    const Expr& target = *s.target;
    if (target.kind == Expr::Kind::kName) {
      assign(target.name, std::move(value));
    } else if (target.kind == Expr::Kind::kAttr) {
      Value object = eval(*target.children[0]);
      if (!object.is_dict() || !object.as_dict().is_namespace) {
        throw EvalError("cannot assign attribute '" + target.name + "' on " + object.type_name() + " (only on a namespace)");
      }
      object.as_dict().set(target.name, std::move(value));
    } else {
      const Value::List parts = iterate(value);
      if (parts.size() != target.children.size()) throw EvalError("cannot unpack values in set");
      for (size_t i = 0; i < parts.size(); ++i) assign(target.children[i]->name, parts[i]);
    }
  }

  void define_macro(const Stmt& s) {
    const Stmt* macro = &s;
    assign(s.name, Value::callable(s.name, [this, macro](const CallArgs& args) { return call_macro(*macro, args); }));
  }

  Value call_macro(const Stmt& m, const CallArgs& args) {
    if (call_depth_ >= limits_.max_call_depth) throw EvalError("macro calls nested too deeply");
    Scope locals;
    Value::List varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i < m.names.size()) {
        locals.emplace_back(m.names[i], args.positional[i]);
      } else {
        varargs.push_back(args.positional[i]);
      }
    }
    Value::Dict kwargs;
    for (const auto& [k, v] : args.keyword) {
      bool is_param = false;
      for (const auto& n : m.names) is_param = is_param || n == k;
      if (is_param) {
        locals.emplace_back(k, v);
      } else {
        kwargs.set(k, v);
      }
    }
    std::vector<Scope> saved = std::move(scopes_);
    scopes_.clear();
    scopes_.push_back(saved.front());  // template globals (a copy: lists and dicts stay shared)
    for (size_t i = 0; i < m.names.size(); ++i) {
      bool bound = false;
      for (const auto& [k, v] : locals) bound = bound || k == m.names[i];
      if (!bound) locals.emplace_back(m.names[i], m.defaults[i] ? eval(*m.defaults[i]) : Value());
    }
    locals.emplace_back("varargs", Value::list(std::move(varargs)));
    locals.emplace_back("kwargs", Value::dict(std::move(kwargs)));
    scopes_.push_back(std::move(locals));
    ++call_depth_;
    std::string out;
    struct Restore {
      Evaluator& e;
      std::vector<Scope>& saved;
      ~Restore() {
        e.scopes_ = std::move(saved);
        --e.call_depth_;
      }
    } restore{*this, saved};
    exec_body(m.body, out);
    return Value::string(std::move(out));
  }

  CallArgs eval_args(const Expr& e) {
    CallArgs args;
    const size_t total = e.children.size() - 1;
    const size_t positional = total - e.keywords.size();
    for (size_t i = 0; i < positional; ++i) args.positional.push_back(eval(*e.children[1 + i]));
    for (size_t i = 0; i < e.keywords.size(); ++i) args.keyword.emplace_back(e.keywords[i], eval(*e.children[1 + positional + i]));
    return args;
  }

  static std::optional<int64_t> optional_int(const Value& v) {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_number()) throw EvalError("slice index must be an integer, not " + v.type_name());
    return v.as_int();
  }

  Value eval(const Expr& e) {
    line_ = e.line;
    count_steps(1);
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: {
        const Value* v = lookup(e.name);
        return v != nullptr ? *v : Value();
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        Value::List items;
        for (const auto& c : e.children) items.push_back(eval(*c));
        return Value::list(std::move(items));
      }
      case Expr::Kind::kDict: {
        Value::Dict d;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          const Value key = eval(*e.children[i]);
          if (!key.is_string()) throw EvalError("dict keys must be strings");
          d.set(key.as_string(), eval(*e.children[i + 1]));
        }
        return Value::dict(std::move(d));
      }
      case Expr::Kind::kAttr: return get_attribute(eval(*e.children[0]), e.name, *this);
      case Expr::Kind::kSubscript: {
        const Value object = eval(*e.children[0]);
        const Value key = eval(*e.children[1]);
        if (key.is_string() && !object.is_dict()) return get_attribute(object, key.as_string(), *this);
        return get_item(object, key);
      }
      case Expr::Kind::kSlice: return eval_slice(e);
      case Expr::Kind::kCall: {
        const Value callee = eval(*e.children[0]);
        if (!callee.is_callable()) {
          const std::string what = e.children[0]->kind == Expr::Kind::kName ? "'" + e.children[0]->name + "'"
                                   : e.children[0]->kind == Expr::Kind::kAttr ? "'" + e.children[0]->name + "'"
                                                                               : "value";
          throw EvalError(what + " is " + (callee.is_undefined() ? "undefined" : "not callable"));
        }
        CallArgs args = eval_args(e);
        line_ = e.line;
        return callee.as_callable()(args);
      }
      case Expr::Kind::kFilter: {
        const Value subject = eval(*e.children[0]);
        CallArgs args = eval_args(e);
        line_ = e.line;
        return apply_filter(e.name, subject, args, *this);
      }
      case Expr::Kind::kTest: {
        const Value subject = eval(*e.children[0]);
        CallArgs args = eval_args(e);
        line_ = e.line;
        return Value::boolean(apply_test(e.name, subject, args, *this) != e.negated);
      }
      case Expr::Kind::kUnary: {
        const Value v = eval(*e.children[0]);
        if (e.name == "not") return Value::boolean(!v.truthy());
        if (!v.is_number()) throw EvalError("bad operand for unary " + e.name + ": " + v.type_name());
        if (e.name == "+") return v.kind() == Value::Kind::kBool ? Value::integer(v.as_int()) : v;
        if (v.kind() == Value::Kind::kFloat) return Value::number(-v.as_double());
        if (v.as_int() == INT64_MIN) return Value::number(-static_cast<double>(v.as_int()));
        return Value::integer(-v.as_int());
      }
      case Expr::Kind::kBinary: return eval_binary(e);
      case Expr::Kind::kCondition:
        if (eval(*e.children[1]).truthy()) return eval(*e.children[0]);
        return e.children[2] ? eval(*e.children[2]) : Value();
    }
    return Value();
  }

  Value eval_slice(const Expr& e) {
    const Value object = eval(*e.children[0]);
    std::optional<int64_t> parts[3];
    for (int i = 0; i < 3; ++i) {
      if (e.children[static_cast<size_t>(i) + 1]) parts[i] = optional_int(eval(*e.children[static_cast<size_t>(i) + 1]));
    }
    if (object.is_string()) return Value::string(str::slice(object.as_string(), parts[0], parts[1], parts[2]));
    if (object.is_list()) {
      const Value::List& list = object.as_list();
      Value::List out;
      for (int64_t i : slice_indices(static_cast<int64_t>(list.size()), parts[0], parts[1], parts[2])) {
        out.push_back(list[static_cast<size_t>(i)]);
      }
      return Value::list(std::move(out));
    }
    if (object.is_undefined()) return Value();
    throw EvalError("cannot slice " + object.type_name());
  }

  bool contains(const Value& container, const Value& item) {
    if (container.is_string()) {
      if (!item.is_string()) throw EvalError("'in <string>' needs a string on the left, not " + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    }
    if (container.is_dict()) return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    if (container.is_list()) {
      for (const Value& v : container.as_list()) {
        count_steps(1);
        if (values_equal(v, item)) return true;
      }
      return false;
    }
    if (container.is_undefined() || container.is_none()) return false;
    throw EvalError("'in' needs a string, list or dict on the right, not " + container.type_name());
  }

  Value eval_binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value left = eval(*e.children[0]);
      return left.truthy() ? eval(*e.children[1]) : left;
    }
    if (op == "or") {
      Value left = eval(*e.children[0]);
      return left.truthy() ? left : eval(*e.children[1]);
    }
    const Value a = eval(*e.children[0]);
    const Value b = eval(*e.children[1]);
    line_ = e.line;
    if (op == "==") return Value::boolean(values_equal(a, b));
    if (op == "!=") return Value::boolean(!values_equal(a, b));
    if (op == "in") return Value::boolean(contains(b, a));
    if (op == "not in") return Value::boolean(!contains(b, a));
    if (op == "~") return Value::string(a.to_output() + b.to_output());
    if (op == "<" || op == "<=" || op == ">" || op == ">=") return Value::boolean(compare(op, a, b));
    return arithmetic(op, a, b);
  }

  // A list of `count` values would still fit the render's memory budget (checked before the
  // copy is made: the copy itself is what takes the host's memory).
  static void ensure_list_room(uint64_t count) {
    if (count > std::numeric_limits<size_t>::max() / sizeof(Value)) throw EvalError("value exceeds the template size limit");
    budget::ensure_room(static_cast<size_t>(count) * sizeof(Value));
  }

  static bool compare(const std::string& op, const Value& a, const Value& b) {
    int c = 0;
    if (a.is_number() && b.is_number()) {
      c = a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double() ? 1 : 0;
    } else if (a.is_string() && b.is_string()) {
      c = a.as_string().compare(b.as_string());
    } else {
      throw EvalError("cannot compare " + a.type_name() + " " + op + " " + b.type_name());
    }
    if (op == "<") return c < 0;
    if (op == "<=") return c <= 0;
    if (op == ">") return c > 0;
    return c >= 0;
  }

  Value repeat(const Value& seq, int64_t times) {
    const size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size();
    // Nothing repeated is nothing, whatever the count: `'' * 8**20` looped 10^18 times over an
    // empty string, allocating nothing and checking no bound (a render that never ended).
    if (times <= 0 || unit == 0) return seq.is_string() ? Value::string("") : Value::list();
    if (unit != 0 && static_cast<uint64_t>(times) > limits_.max_output_bytes / unit) {
      throw EvalError("value exceeds the template size limit");
    }
    if (seq.is_list()) ensure_list_room(unit * static_cast<uint64_t>(times));
    if (seq.is_string()) {
      std::string out;
      for (int64_t i = 0; i < times; ++i) out += seq.as_string();
      return Value::string(std::move(out));
    }
    Value::List out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
    return Value::list(std::move(out));
  }

  Value arithmetic(const std::string& op, const Value& a, const Value& b) {
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        budget::check_string(a.as_string().size() + b.as_string().size());
        return Value::string(a.as_string() + b.as_string());
      }
      if (a.is_list() && b.is_list()) {
        ensure_list_room(uint64_t{a.as_list().size()} + b.as_list().size());
        Value::List out;
        out.reserve(a.as_list().size() + b.as_list().size());
        out.insert(out.end(), a.as_list().begin(), a.as_list().end());
        out.insert(out.end(), b.as_list().begin(), b.as_list().end());
        return Value::list(std::move(out));
      }
    }
    if (op == "*") {
      if ((a.is_string() || a.is_list()) && b.kind() == Value::Kind::kInt) return repeat(a, b.as_int());
      if ((b.is_string() || b.is_list()) && a.kind() == Value::Kind::kInt) return repeat(b, a.as_int());
    }
    if (!a.is_number() || !b.is_number()) {
      throw EvalError("unsupported operand types for " + op + ": " + a.type_name() + " and " + b.type_name());
    }
    const bool floats = a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat;
    const double x = a.as_double();
    const double y = b.as_double();
    if (op == "/") {
      if (y == 0) throw EvalError("division by zero");
      return Value::number(x / y);
    }
    if (op == "**") {
      const double r = std::pow(x, y);
      if (floats || b.as_int() < 0 || std::fabs(r) >= 9.2e18) return Value::number(r);
      int64_t result = 1;
      int64_t base = a.as_int();
      for (int64_t n = b.as_int(); n > 0; n >>= 1) {  // by squaring; overflow falls back to float
        if ((n & 1) != 0 && __builtin_mul_overflow(result, base, &result)) return Value::number(r);
        if (n > 1 && __builtin_mul_overflow(base, base, &base)) return Value::number(r);
      }
      return Value::integer(result);
    }
    if (floats) {
      if (op == "+") return Value::number(x + y);
      if (op == "-") return Value::number(x - y);
      if (op == "*") return Value::number(x * y);
      if (y == 0) throw EvalError("division by zero");
      if (op == "//") return Value::number(std::floor(x / y));
      const double m = std::fmod(x, y);
      return Value::number(m != 0 && ((m < 0) != (y < 0)) ? m + y : m);
    }
    const int64_t i = a.as_int();
    const int64_t j = b.as_int();
    int64_t r = 0;
    if (op == "+") return __builtin_add_overflow(i, j, &r) ? Value::number(x + y) : Value::integer(r);
    if (op == "-") return __builtin_sub_overflow(i, j, &r) ? Value::number(x - y) : Value::integer(r);
    if (op == "*") return __builtin_mul_overflow(i, j, &r) ? Value::number(x * y) : Value::integer(r);
    if (j == 0) throw EvalError(op == "//" ? "integer division by zero" : "integer modulo by zero");
    if (i == INT64_MIN && j == -1) return op == "//" ? Value::number(-x) : Value::integer(0);
    int64_t q = i / j;
    int64_t m = i % j;
    if (m != 0 && ((m < 0) != (j < 0))) {
      --q;
      m += j;
    }
    return op == "//" ? Value::integer(q) : Value::integer(m);
  }

  RenderLimits limits_;
  RenderBudget budget_;
  std::vector<Scope> scopes_;
  int call_depth_ = 0;
  int line_ = 0;
};

}  // namespace

Template Template::parse(std::string_view source) {
  Template t;
  t.body_ = std::make_shared<const Body>(parse_template(source));
  return t;
}

std::string Template::render(const Value::Dict& variables, const RenderLimits& limits) const {
  Evaluator evaluator(limits, variables);
  return evaluator.run(*body_);
}

}  // namespace vks::jinja
