#include "engine/grammar/json_pattern.h"

#include <algorithm>
#include <vector>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/gbnf_text.h"
#include "engine/tokenizer/utf8.h"

namespace vks::grammar {

namespace {

using Ranges = std::vector<CodepointRange>;

// Characters a JSON string body cannot hold unescaped.
const Ranges kJsonEscaped = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};

Ranges subtract(const Ranges& set, const Ranges& remove) {
  Ranges out;
  for (CodepointRange r : set) {
    for (const auto& x : remove) {
      if (x.last < r.first || x.first > r.last) continue;
      if (x.first > r.first) out.push_back({r.first, x.first - 1});
      if (x.last >= r.last) {
        r.first = 1;
        r.last = 0;  // consumed
        break;
      }
      r.first = x.last + 1;
    }
    if (r.first <= r.last) out.push_back(r);
  }
  return out;
}

Ranges sorted_merged(Ranges r) {
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Ranges out;
  for (const auto& x : r) {
    if (!out.empty() && x.first <= out.back().last + 1) {
      out.back().last = std::max(out.back().last, x.last);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

class PatternCompiler {
 public:
  explicit PatternCompiler(std::string_view p) : p_(p) {}

  std::string run() {
    if (more() && p_[pos_] == '^') ++pos_;
    std::string out = alternation();
    if (more()) fail("unexpected '" + std::string(1, p_[pos_]) + "'");
    return out;
  }

 private:
  std::string_view p_;
  size_t pos_ = 0;
  int depth_ = 0;

  [[noreturn]] void fail(const std::string& msg) const {
    throw CompileError(pos_, "pattern: offset " + std::to_string(pos_) + ": " + msg);
  }
  bool more() const { return pos_ < p_.size(); }

  std::string alternation() {
    std::string out(1, '(');
    out.append(sequence());
    while (more() && p_[pos_] == '|') {
      ++pos_;
      out.append(" | ");
      out.append(sequence());
    }
    out.push_back(')');
    return out;
  }

  std::string sequence() {
    std::string out;
    while (more() && p_[pos_] != '|' && p_[pos_] != ')') {
      if (p_[pos_] == '$' && pos_ + 1 == p_.size()) {
        ++pos_;
        break;
      }
      std::string a = atom();
      a += quantifier();
      out += a + " ";
    }
    return out.empty() ? "\"\"" : out;
  }

  std::string quantifier() {
    if (!more()) return "";
    std::string q;
    const char c = p_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++pos_;
    } else if (c == '{') {
      const size_t end = p_.find('}', pos_);
      if (end == std::string_view::npos) fail("unterminated {m,n}");
      q = std::string(p_.substr(pos_, end - pos_ + 1));
      for (char d : q.substr(1, q.size() - 2)) {
        if (!(d >= '0' && d <= '9') && d != ',') fail("bad repetition " + q);
      }
      pos_ = end + 1;
    }
    if (!q.empty() && more() && p_[pos_] == '?') ++pos_;  // lazy: same language
    if (!q.empty() && more() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '?' || p_[pos_] == '{')) {
      fail("repeated quantifier");
    }
    return q;
  }

  uint32_t utf8_char() {
    uint32_t cp = 0;
    if (!utf8_decode(p_, pos_, cp)) fail("invalid UTF-8");
    return cp;
  }

  // A shorthand class (\d ...) into `set`; returns false if `c` is not one.
  static bool shorthand(char c, Ranges& set, bool& negated) {
    switch (c) {
      case 'd': set = {{'0', '9'}}; negated = false; return true;
      case 'D': set = {{'0', '9'}}; negated = true; return true;
      case 'w': set = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; negated = false; return true;
      case 'W': set = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; negated = true; return true;
      case 's': set = {{' ', ' '}}; negated = false; return true;  // JSON-safe subset of \s
      case 'S': set = {{0, ' '}}; negated = true; return true;
      default: return false;
    }
  }

  uint32_t escaped_char() {  // after the backslash
    if (!more()) fail("pattern ends with a backslash");
    const char c = p_[pos_++];
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      default: break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      --pos_;
      fail(std::string("unsupported escape '\\") + c + "'");
    }
    return static_cast<unsigned char>(c);
  }

  std::string class_expr(const Ranges& set, bool negated) {
    const Ranges allowed = negated ? sorted_merged([&] {
      Ranges r = set;
      r.insert(r.end(), kJsonEscaped.begin(), kJsonEscaped.end());
      return r;
    }())
                                   : subtract(sorted_merged(set), kJsonEscaped);
    if (!negated && allowed.empty()) fail("the class matches no character a JSON string holds unescaped");
    return gbnf_class(allowed, negated);
  }

  std::string literal_char(uint32_t cp) {
    if (cp == '"') return "\"\\\\\\\"\"";    // JSON \"  as a GBNF literal
    if (cp == '\\') return "\"\\\\\\\\\"";   // JSON \\  as a GBNF literal
    if (cp == '\n') return "\"\\\\n\"";
    if (cp == '\t') return "\"\\\\t\"";
    if (cp == '\r') return "\"\\\\r\"";
    if (cp < 0x20) fail("control characters are not supported in patterns");
    std::string lit(1, '"');
    lit.append(gbnf_char(cp));
    lit.push_back('"');
    return lit;
  }

  std::string atom() {
    const char c = p_[pos_];
    if (c == '(') {
      ++pos_;
      if (++depth_ > kMaxGroupNesting) fail("groups nested too deeply");
      if (p_.substr(pos_, 2) == "?:") {
        pos_ += 2;
      } else if (more() && p_[pos_] == '?') {
        fail("unsupported group syntax (?");
      }
      std::string inner = alternation();
      if (!more() || p_[pos_] != ')') fail("expected ')'");
      ++pos_;
      --depth_;
      return inner;
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++pos_;
      return class_expr({{'\n', '\n'}}, true);
    }
    if (c == '\\') {
      ++pos_;
      Ranges set;
      bool negated = false;
      if (more() && shorthand(p_[pos_], set, negated)) {
        ++pos_;
        return class_expr(set, negated);
      }
      return literal_char(escaped_char());
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') fail("nothing to repeat");
    if (c == '^' || c == '$') fail("anchors are only supported at the ends of the pattern");
    return literal_char(utf8_char());
  }

  std::string char_class() {
    const size_t start = pos_++;
    bool negated = false;
    if (more() && p_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    Ranges set;
    bool first = true;
    while (more() && (p_[pos_] != ']' || first)) {
      first = false;
      uint32_t lo;
      if (p_[pos_] == '\\') {
        ++pos_;
        Ranges sh;
        bool sh_neg = false;
        if (more() && shorthand(p_[pos_], sh, sh_neg)) {
          if (sh_neg) fail("negated shorthand inside a class is not supported");
          ++pos_;
          set.insert(set.end(), sh.begin(), sh.end());
          continue;
        }
        lo = escaped_char();
      } else {
        lo = utf8_char();
      }
      uint32_t hi = lo;
      if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        if (p_[pos_] == '\\') {
          ++pos_;
          hi = escaped_char();
        } else {
          hi = utf8_char();
        }
        if (hi < lo) fail("class range ends before it starts");
      }
      set.push_back({lo, hi});
    }
    if (!more()) {
      pos_ = start;
      fail("unterminated class");
    }
    ++pos_;
    return class_expr(set, negated);
  }
};

}  // namespace

std::string json_pattern_to_gbnf(std::string_view pattern) { return PatternCompiler(pattern).run(); }

}  // namespace vks::grammar
