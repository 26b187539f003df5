#pragma once
// Syntax tree of a parsed template. Expressions and statements are plain tagged structs: the
// evaluator switches on `kind`.
#include <memory>
#include <string>
#include <vector>

#include "engine/chat/jinja_value.h"

namespace vks::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // children: items
    kTuple,      // children: items (evaluates to a list)
    kDict,       // children: key0, value0, key1, value1, ...
    kAttr,       // children[0].name
    kSubscript,  // children[0][children[1]]
    kSlice,      // children[0][children[1]:children[2]:children[3]] (null child = omitted)
    kCall,       // children[0](args...)
    kFilter,     // children[0] | name(args...)
    kTest,       // children[0] is [not] name(args...)
    kUnary,      // name: "not" or "-" or "+"; children[0]
    kBinary,     // name: operator; children[0], children[1]
    kCondition,  // children[0] if children[1] else children[2] (children[2] may be null)
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> children;
  // kCall, kFilter, kTest: arguments are children[1..]; the last keywords.size() of them are keyword
  // arguments with these names.
  std::vector<std::string> keywords;
  bool negated = false;  // kTest: `is not`
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct IfBranch {
  ExprPtr condition;
  Body body;
};

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches, else_body
    kFor,       // names in expr [if condition]: body [else else_body]
    kSet,       // target = expr
    kSetBlock,  // {% set name %}body{% endset %}
    kMacro,     // name(params=defaults): body
    kBreak,
    kContinue,
    kFilterBlock,  // {% filter expr %}body{% endfilter %}: expr is a kFilter over a null subject
  };
  Kind kind = Kind::kText;
  int line = 0;
  std::string text;
  std::string name;
  ExprPtr expr;
  ExprPtr target;     // kSet: kName, kAttr or kTuple of names
  ExprPtr condition;  // kFor: optional filter
  std::vector<std::string> names;  // kFor: loop variables; kMacro: parameter names
  std::vector<ExprPtr> defaults;   // kMacro: per parameter, null when none
  std::vector<IfBranch> branches;
  Body body;
  Body else_body;
};

}  // namespace vks::jinja
