#include "engine/chat/jinja_parser.h"

#include <cerrno>
#include <cstdlib>
#include <set>

#include "engine/chat/jinja_error.h"
#include "engine/chat/jinja_lexer.h"

namespace vks::jinja {
namespace {

// Tests that take one argument without parentheses, as in `x is divisibleby 3`.
const std::set<std::string, std::less<>> kTestsWithBareArgument = {
    "divisibleby", "sameas", "eq", "equalto", "ne", "lt", "gt", "le", "ge", "in", "==", "!="};

class Parser {
 public:
  Parser(std::vector<Token> tokens, int max_depth) : tokens_(std::move(tokens)), max_depth_(max_depth) {}

  Body parse_all() {
    std::string end_tag;
    Body body = parse_body({}, end_tag);
    return body;
  }

 private:
  // RAII nesting counter: every recursive production holds one.
  class DepthGuard {
   public:
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > p_.max_depth_) throw TemplateError(p_.peek().line, "template nested too deeply");
    }
    ~DepthGuard() { --p_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Parser& p_;
  };

  const Token& peek(size_t ahead = 0) const {
    const size_t i = pos_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool at_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).type == TokenType::kOperator && peek(ahead).text == op;
  }
  bool at_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).type == TokenType::kName && peek(ahead).text == name;
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::kText: return "text";
      case TokenType::kExprOpen: return "'{{'";
      case TokenType::kExprClose: return "'}}'";
      case TokenType::kStmtOpen: return "'{%'";
      case TokenType::kStmtClose: return "'%}'";
      case TokenType::kString: return "string";
      case TokenType::kEnd: return "end of template";
      default: return "'" + t.text + "'";
    }
  }
  [[noreturn]] void fail(const std::string& message) const { throw TemplateError(peek().line, message); }
  void expect_op(std::string_view op) {
    if (!at_op(op)) fail("expected '" + std::string(op) + "', found " + describe(peek()));
    next();
  }
  void expect(TokenType type, const char* what) {
    if (peek().type != type) fail(std::string("expected ") + what + ", found " + describe(peek()));
    next();
  }
  std::string expect_name() {
    if (peek().type != TokenType::kName) fail("expected a name, found " + describe(peek()));
    return next().text;
  }

  // Statements until one of end_tags opens a tag; that tag's keyword is returned in end_tag and
  // consumed (its remaining tokens are left for the caller).
  Body parse_body(const std::set<std::string, std::less<>>& end_tags, std::string& end_tag, int open_line = 0) {
    DepthGuard guard(*this);
    Body body;
    for (;;) {
      const Token& t = peek();
      if (t.type == TokenType::kEnd) {
        if (!end_tags.empty()) throw TemplateError(open_line, "missing end tag: expected one of " + join(end_tags));
        return body;
      }
      if (t.type == TokenType::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
        continue;
      }
      if (t.type == TokenType::kExprOpen) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->line = t.line;
        s->expr = parse_expression();
        expect(TokenType::kExprClose, "'}}'");
        body.push_back(std::move(s));
        continue;
      }
      if (t.type != TokenType::kStmtOpen) fail("unexpected " + describe(t));
      next();
      if (peek().type != TokenType::kName) fail("expected a tag name after '{%'");
      const std::string keyword = peek().text;
      if (end_tags.count(keyword) != 0) {
        next();
        end_tag = keyword;
        return body;
      }
      if (keyword.rfind("end", 0) == 0 || keyword == "elif" || keyword == "else") {
        throw TemplateError(peek().line, "unexpected '" + keyword + "'" +
                                             (end_tags.empty() ? std::string(" (no open block)")
                                                               : " (expected one of " + join(end_tags) + ")"));
      }
      body.push_back(parse_statement());
    }
  }

  static std::string join(const std::set<std::string, std::less<>>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }

  StmtPtr parse_statement() {
    const Token& t = next();
    auto s = std::make_unique<Stmt>();
    s->line = t.line;
    const std::string& kw = t.text;
    std::string end_tag;
    if (kw == "if") {
      s->kind = Stmt::Kind::kIf;
      std::string tag = "elif";
      while (tag == "elif") {
        IfBranch branch;
        branch.condition = parse_expression();
        expect(TokenType::kStmtClose, "'%}'");
        branch.body = parse_body({"elif", "else", "endif"}, tag, s->line);
        s->branches.push_back(std::move(branch));
      }
      if (tag == "else") {
        expect(TokenType::kStmtClose, "'%}'");
        s->else_body = parse_body({"endif"}, tag, s->line);
      }
      expect(TokenType::kStmtClose, "'%}'");
    } else if (kw == "for") {
      s->kind = Stmt::Kind::kFor;
      const bool parenthesized = at_op("(");
      if (parenthesized) next();
      s->names.push_back(expect_name());
      while (at_op(",")) {
        next();
        s->names.push_back(expect_name());
      }
      if (parenthesized) expect_op(")");
      if (!at_name("in")) fail("expected 'in' in for loop");
      next();
      s->expr = parse_expression(/*allow_condition=*/false);
      if (at_name("if")) {
        next();
        s->condition = parse_expression(false);
      }
      if (at_name("recursive")) fail("recursive for loops are not supported");
      expect(TokenType::kStmtClose, "'%}'");
      s->body = parse_body({"else", "endfor"}, end_tag, s->line);
      if (end_tag == "else") {
        expect(TokenType::kStmtClose, "'%}'");
        s->else_body = parse_body({"endfor"}, end_tag, s->line);
      }
      expect(TokenType::kStmtClose, "'%}'");
    } else if (kw == "set") {
      ExprPtr target = parse_set_target();
      if (at_op("=")) {
        next();
        s->kind = Stmt::Kind::kSet;
        s->target = std::move(target);
        s->expr = parse_tuple_or_expression();
        expect(TokenType::kStmtClose, "'%}'");
      } else {
        if (target->kind != Expr::Kind::kName) fail("a set block needs a plain variable name");
        s->kind = Stmt::Kind::kSetBlock;
        s->name = target->name;
        expect(TokenType::kStmtClose, "'%}'");
        s->body = parse_body({"endset"}, end_tag, s->line);
        expect(TokenType::kStmtClose, "'%}'");
      }
    } else if (kw == "macro") {
      s->kind = Stmt::Kind::kMacro;
      s->name = expect_name();
      expect_op("(");
      while (!at_op(")")) {
        s->names.push_back(expect_name());
        if (at_op("=")) {
          next();
          s->defaults.push_back(parse_expression());
        } else {
          s->defaults.push_back(nullptr);
        }
        if (!at_op(",")) break;
        next();
      }
      expect_op(")");
      expect(TokenType::kStmtClose, "'%}'");
      s->body = parse_body({"endmacro"}, end_tag, s->line);
      if (peek().type == TokenType::kName) next();  // {% endmacro name %}
      expect(TokenType::kStmtClose, "'%}'");
    } else if (kw == "break" || kw == "continue") {
      s->kind = kw == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      expect(TokenType::kStmtClose, "'%}'");
    } else if (kw == "filter") {
      s->kind = Stmt::Kind::kFilterBlock;
      ExprPtr subject = std::make_unique<Expr>();
      subject->line = s->line;
      s->expr = parse_filter_chain(std::move(subject), /*require_one=*/true);
      expect(TokenType::kStmtClose, "'%}'");
      s->body = parse_body({"endfilter"}, end_tag, s->line);
      expect(TokenType::kStmtClose, "'%}'");
    } else if (kw == "generation") {
      // transformers' {% generation %} marks assistant text for training masks; it renders its body.
      s->kind = Stmt::Kind::kIf;
      expect(TokenType::kStmtClose, "'%}'");
      IfBranch branch;
      branch.condition = std::make_unique<Expr>();
      branch.condition->value = Value::boolean(true);
      branch.body = parse_body({"endgeneration"}, end_tag, s->line);
      s->branches.push_back(std::move(branch));
      expect(TokenType::kStmtClose, "'%}'");
    } else {
      throw TemplateError(t.line, "unknown tag '" + kw + "'");
    }
    return s;
  }

  ExprPtr parse_set_target() {
    const int line = peek().line;
    ExprPtr first = make(Expr::Kind::kName, line);
    first->name = expect_name();
    if (at_op(".")) {
      next();
      ExprPtr attr = make(Expr::Kind::kAttr, line);
      attr->name = expect_name();
      attr->children.push_back(std::move(first));
      return attr;
    }
    if (!at_op(",")) return first;
    ExprPtr tuple = make(Expr::Kind::kTuple, line);
    tuple->children.push_back(std::move(first));
    while (at_op(",")) {
      next();
      ExprPtr name = make(Expr::Kind::kName, peek().line);
      name->name = expect_name();
      tuple->children.push_back(std::move(name));
    }
    return tuple;
  }

  static ExprPtr make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, int line) {
    ExprPtr e = make(Expr::Kind::kBinary, line);
    e->name = std::move(op);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  // `a, b` without brackets on the right of a set.
  ExprPtr parse_tuple_or_expression() {
    ExprPtr first = parse_expression();
    if (!at_op(",")) return first;
    ExprPtr tuple = make(Expr::Kind::kTuple, first->line);
    tuple->children.push_back(std::move(first));
    while (at_op(",")) {
      next();
      tuple->children.push_back(parse_expression());
    }
    return tuple;
  }

  ExprPtr parse_expression(bool allow_condition = true) {
    DepthGuard guard(*this);
    ExprPtr e = parse_or();
    while (allow_condition && at_name("if")) {
      const int line = next().line;
      ExprPtr cond = make(Expr::Kind::kCondition, line);
      ExprPtr test = parse_or();
      ExprPtr otherwise;
      if (at_name("else")) {
        next();
        otherwise = parse_expression();
      }
      cond->children.push_back(std::move(e));
      cond->children.push_back(std::move(test));
      cond->children.push_back(std::move(otherwise));
      e = std::move(cond);
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (at_name("or")) {
      const int line = next().line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (at_name("and")) {
      const int line = next().line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      DepthGuard guard(*this);
      const int line = next().line;
      ExprPtr e = make(Expr::Kind::kUnary, line);
      e->name = "not";
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    for (;;) {
      const Token& t = peek();
      std::string op;
      if (t.type == TokenType::kOperator &&
          (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=")) {
        op = t.text;
        next();
      } else if (at_name("in")) {
        op = "in";
        next();
      } else if (at_name("not") && at_name("in", 1)) {
        op = "not in";
        next();
        next();
      } else {
        return e;
      }
      e = binary(op, std::move(e), parse_math1(), t.line);
    }
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& t = next();
      e = binary(t.text, std::move(e), parse_concat(), t.line);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (at_op("~")) {
      const int line = next().line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& t = next();
      e = binary(t.text, std::move(e), parse_pow(), t.line);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary();
    while (at_op("**")) {
      const int line = next().line;
      e = binary("**", std::move(e), parse_unary(), line);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter = true) {
    DepthGuard guard(*this);
    if (at_op("-") || at_op("+")) {
      const Token& t = next();
      ExprPtr e = make(Expr::Kind::kUnary, t.line);
      e->name = t.text;
      e->children.push_back(parse_unary(false));
      return with_filter ? parse_filter_chain(std::move(e), false) : std::move(e);
    }
    ExprPtr e = parse_postfix(parse_primary());
    return with_filter ? parse_filter_chain(std::move(e), false) : std::move(e);
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    const Token& t = peek();
    switch (t.type) {
      case TokenType::kString: {
        ExprPtr e = make(Expr::Kind::kLiteral, t.line);
        std::string s;
        while (peek().type == TokenType::kString) s += next().text;  // 'a' 'b' is 'ab'
        e->value = Value::string(std::move(s));
        return e;
      }
      case TokenType::kInt: {
        next();
        ExprPtr e = make(Expr::Kind::kLiteral, t.line);
        errno = 0;
        const long long v = std::strtoll(t.text.c_str(), nullptr, 10);
        if (errno == ERANGE) throw TemplateError(t.line, "integer literal out of range");
        e->value = Value::integer(v);
        return e;
      }
      case TokenType::kFloat: {
        next();
        ExprPtr e = make(Expr::Kind::kLiteral, t.line);
        e->value = Value::number(std::strtod(t.text.c_str(), nullptr));
        return e;
      }
      case TokenType::kName: {
        next();
        ExprPtr e = make(Expr::Kind::kLiteral, t.line);
        if (t.text == "true" || t.text == "True") {
          e->value = Value::boolean(true);
        } else if (t.text == "false" || t.text == "False") {
          e->value = Value::boolean(false);
        } else if (t.text == "none" || t.text == "None") {
          e->value = Value::none();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        return e;
      }
      case TokenType::kOperator: break;
      default: fail("expected an expression, found " + describe(t));
    }
    if (at_op("(")) {
      next();
      if (at_op(")")) {
        next();
        return make(Expr::Kind::kTuple, t.line);
      }
      ExprPtr first = parse_expression();
      if (!at_op(",")) {
        expect_op(")");
        return first;
      }
      ExprPtr tuple = make(Expr::Kind::kTuple, t.line);
      tuple->children.push_back(std::move(first));
      while (at_op(",")) {
        next();
        if (at_op(")")) break;
        tuple->children.push_back(parse_expression());
      }
      expect_op(")");
      return tuple;
    }
    if (at_op("[")) {
      next();
      ExprPtr list = make(Expr::Kind::kList, t.line);
      while (!at_op("]")) {
        list->children.push_back(parse_expression());
        if (!at_op(",")) break;
        next();
      }
      expect_op("]");
      return list;
    }
    if (at_op("{")) {
      next();
      ExprPtr dict = make(Expr::Kind::kDict, t.line);
      while (!at_op("}")) {
        dict->children.push_back(parse_expression());
        expect_op(":");
        dict->children.push_back(parse_expression());
        if (!at_op(",")) break;
        next();
      }
      expect_op("}");
      return dict;
    }
    fail("expected an expression, found " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      if (at_op(".")) {
        const int line = next().line;
        ExprPtr attr = make(Expr::Kind::kAttr, line);
        if (peek().type == TokenType::kInt) {
          // `x.0` is `x[0]` in Jinja
          attr->kind = Expr::Kind::kSubscript;
          attr->children.push_back(std::move(e));
          attr->children.push_back(parse_primary());
        } else {
          attr->name = expect_name();
          attr->children.push_back(std::move(e));
        }
        e = std::move(attr);
      } else if (at_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (at_op("(")) {
        ExprPtr call = make(Expr::Kind::kCall, peek().line);
        call->children.push_back(std::move(e));
        parse_call_args(*call);
        e = std::move(call);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr object) {
    DepthGuard guard(*this);
    const int line = next().line;  // [
    ExprPtr parts[3];
    int colons = 0;
    for (;;) {
      if (at_op(":")) {
        next();
        if (++colons > 2) fail("too many ':' in slice");
        continue;
      }
      if (at_op("]")) break;
      if (parts[colons]) fail("expected ']' or ':' in subscript");
      parts[colons] = parse_expression();
    }
    next();  // ]
    if (colons == 0) {
      if (!parts[0]) fail("empty subscript");
      ExprPtr e = make(Expr::Kind::kSubscript, line);
      e->children.push_back(std::move(object));
      e->children.push_back(std::move(parts[0]));
      return e;
    }
    ExprPtr e = make(Expr::Kind::kSlice, line);
    e->children.push_back(std::move(object));
    for (auto& p : parts) e->children.push_back(std::move(p));
    return e;
  }

  // `(a, b, key=c)` into call->children[1..] and call->keywords.
  void parse_call_args(Expr& call) {
    DepthGuard guard(*this);
    expect_op("(");
    while (!at_op(")")) {
      if (peek().type == TokenType::kName && at_op("=", 1)) {
        call.keywords.push_back(next().text);
        next();
        call.children.push_back(parse_expression());
      } else {
        if (!call.keywords.empty()) fail("positional argument after a keyword argument");
        if (at_op("*") || at_op("**")) fail("argument unpacking is not supported");
        call.children.push_back(parse_expression());
      }
      if (!at_op(",")) break;
      next();
    }
    expect_op(")");
  }

  ExprPtr parse_filter_chain(ExprPtr e, bool require_one) {
    bool first = true;
    for (;;) {
      if (at_op("|") || (first && require_one)) {
        if (!(first && require_one)) next();
        first = false;
        ExprPtr f = make(Expr::Kind::kFilter, peek().line);
        f->name = expect_name();
        f->children.push_back(std::move(e));
        if (at_op("(")) parse_call_args(*f);
        e = std::move(f);
      } else if (at_name("is")) {
        const int line = next().line;
        ExprPtr test = make(Expr::Kind::kTest, line);
        if (at_name("not")) {
          next();
          test->negated = true;
        }
        if (peek().type == TokenType::kName) {
          test->name = next().text;
        } else if (at_op("==") || at_op("!=") || at_op("<") || at_op(">") || at_op("<=") || at_op(">=")) {
          test->name = next().text;
        } else {
          fail("expected a test name after 'is'");
        }
        test->children.push_back(std::move(e));
        if (at_op("(")) {
          parse_call_args(*test);
        } else if (kTestsWithBareArgument.count(test->name) != 0 && peek().type != TokenType::kStmtClose &&
                   peek().type != TokenType::kExprClose) {
          test->children.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(test);
      } else {
        return e;
      }
    }
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int max_depth_;
};

}  // namespace

Body parse_template(std::string_view source, int max_depth) {
  Parser parser(lex_template(source), max_depth);
  return parser.parse_all();
}

}  // namespace vks::jinja
