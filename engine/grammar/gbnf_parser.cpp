#include "engine/grammar/gbnf_parser.h"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/utf8.h"

namespace vks::grammar {

namespace {

constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();
constexpr size_t kNone = std::numeric_limits<size_t>::max();

struct Symbol {
  ElementKind kind = ElementKind::kCharSet;
  bool negated = false;
  uint32_t rule = 0;
  std::vector<CodepointRange> ranges;
};
using Sequence = std::vector<Symbol>;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Sorts and merges overlapping or adjacent ranges (Grammar::matches_any relies on it).
std::vector<CodepointRange> normalized(std::vector<CodepointRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CodepointRange> out;
  for (const auto& r : ranges) {
    if (!out.empty() && r.first <= out.back().last + 1) {
      out.back().last = std::max(out.back().last, r.last);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view src) : src_(src) {}

  Grammar run() {
    skip_space(true);
    while (pos_ < src_.size()) parse_rule();
    for (uint32_t id = 0; id < rules_.size(); ++id) {
      if (!defined_[id]) fail(first_use_[id], "undefined rule '" + names_[id] + "'");
    }
    const auto root = ids_.find("root");
    if (root == ids_.end()) fail(0, "the grammar has no 'root' rule");
    Grammar g = flatten(root->second);
    check_left_recursion(g);
    return g;
  }

 private:
  std::string_view src_;
  size_t pos_ = 0;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::vector<Sequence>> rules_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  std::vector<size_t> definition_at_;
  size_t total_symbols_ = 0;
  int depth_ = 0;

  [[noreturn]] void fail(size_t at, const std::string& message) const {
    at = std::min(at, src_.size());
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at; ++i) {
      if (src_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw CompileError(at, "grammar: line " + std::to_string(line) + ", column " + std::to_string(column) +
                               ": " + message);
  }

  bool more() const { return pos_ < src_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }

  void skip_space(bool newline_ok) {
    while (more()) {
      const char c = src_[pos_];
      if (c == '#') {
        while (more() && src_[pos_] != '\n' && src_[pos_] != '\r') ++pos_;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  void count_symbols(size_t n) {
    total_symbols_ += n;
    if (total_symbols_ > kMaxGrammarElements) fail(pos_, "the grammar is too large");
  }

  uint32_t new_rule(const std::string& name, size_t at) {
    const auto id = static_cast<uint32_t>(rules_.size());
    names_.push_back(name);
    rules_.emplace_back();
    defined_.push_back(false);
    first_use_.push_back(at);
    definition_at_.push_back(at);
    return id;
  }

  uint32_t symbol_id(const std::string& name, size_t at) {
    const auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const uint32_t id = new_rule(name, at);
    ids_.emplace(name, id);
    return id;
  }

  uint32_t generated_rule(const std::string& base) {
    const uint32_t id = new_rule(base + "_" + std::to_string(rules_.size()), pos_);
    defined_[id] = true;
    return id;
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (more() && is_name_char(src_[pos_])) ++pos_;
    return std::string(src_.substr(start, pos_ - start));
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string name = parse_name();
    if (name.empty()) fail(start, "expected a rule name");
    skip_space(false);
    if (src_.substr(pos_, 3) != "::=") fail(pos_, "expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = symbol_id(name, start);
    if (defined_[id]) fail(start, "rule '" + name + "' is defined twice");
    defined_[id] = true;
    definition_at_[id] = start;
    parse_alternates(id, name, false);
    if (peek() == '\r') ++pos_;
    if (peek() == '\n') {
      ++pos_;
    } else if (more()) {
      fail(pos_, std::string("unexpected '") + peek() + "' (expected an item, '|' or the end of the line)");
    }
    skip_space(true);
  }

  void parse_alternates(uint32_t rule, const std::string& name, bool nested) {
    std::vector<Sequence> alternatives;
    alternatives.push_back(parse_sequence(name, nested));
    while (peek() == '|' || (!nested && continues_on_next_line())) {
      skip_space(true);
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(name, nested));
    }
    rules_[rule] = std::move(alternatives);
  }

  // A top-level rule may continue with "| ..." on the following lines (llama.cpp requires the
  // alternatives of a multi-line rule to be inside parentheses; this is a compatible extension).
  bool continues_on_next_line() const {
    size_t p = pos_;
    bool newline = false;
    while (p < src_.size()) {
      const char c = src_[p];
      if (c == '#') {
        while (p < src_.size() && src_[p] != '\n') ++p;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        newline = newline || c == '\n';
        ++p;
      } else {
        break;
      }
    }
    return newline && p < src_.size() && src_[p] == '|';
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int d = hex_value(peek());
      if (d < 0) fail(pos_, "expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > 0x10FFFF) fail(pos_, "code point beyond U+10FFFF");
    return v;
  }

  // One character of a literal or class, with escapes; UTF-8 in the source is decoded.
  uint32_t parse_char() {
    const size_t start = pos_;
    if (peek() == '\\') {
      ++pos_;
      if (!more()) fail(start, "unfinished escape");
      const char e = src_[pos_++];
      switch (e) {
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        case 't': return '\t';
        case 'r': return '\r';
        case 'n': return '\n';
        case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'':
          return static_cast<unsigned char>(e);
        default: fail(start, std::string("unknown escape '\\") + e + "'");
      }
    }
    uint32_t cp = 0;
    if (!utf8_decode(src_, pos_, cp)) fail(start, "invalid UTF-8");
    return cp;
  }

  uint32_t parse_count() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      if (v > kMaxRepetition) fail(start, "repetition count above " + std::to_string(kMaxRepetition));
      ++pos_;
    }
    if (pos_ == start) fail(start, "expected a number");
    return static_cast<uint32_t>(v);
  }

  // x{min,max} (max kUnbounded = no limit), as llama.cpp desugars it: min copies of x, then
  // either a right-recursive rule (x*) or max-min nested optional rules (x (x (x)?)?)?.
  void repeat(Sequence& seq, size_t last_start, uint32_t min, uint32_t max, const std::string& name, size_t at) {
    if (last_start == kNone || last_start >= seq.size()) fail(at, "a repetition operator needs an item before it");
    const Sequence item(seq.begin() + static_cast<std::ptrdiff_t>(last_start), seq.end());
    seq.resize(last_start);
    const size_t copies = static_cast<size_t>(min) + (max == kUnbounded ? 1 : max - min);
    count_symbols(item.size() * copies + copies);
    for (uint32_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
    Symbol ref;
    ref.kind = ElementKind::kRuleRef;
    if (max == kUnbounded) {
      const uint32_t r = generated_rule(name);
      Sequence again = item;
      ref.rule = r;
      again.push_back(ref);
      rules_[r] = {std::move(again), Sequence{}};
      seq.push_back(ref);
      return;
    }
    if (max == min) return;
    uint32_t last = 0;
    for (uint32_t i = 0; i < max - min; ++i) {
      const uint32_t r = generated_rule(name);
      Sequence alt = item;
      if (i > 0) {
        ref.rule = last;
        alt.push_back(ref);
      }
      rules_[r] = {std::move(alt), Sequence{}};
      last = r;
    }
    ref.rule = last;
    seq.push_back(ref);
  }

  Sequence parse_sequence(const std::string& name, bool nested) {
    Sequence seq;
    size_t last_start = kNone;
    while (more()) {
      const char c = peek();
      const size_t at = pos_;
      if (c == '"') {
        ++pos_;
        last_start = seq.size();
        while (peek() != '"') {
          if (!more()) fail(at, "unterminated string literal");
          const uint32_t cp = parse_char();
          count_symbols(1);
          seq.push_back(Symbol{ElementKind::kCharSet, false, 0, {{cp, cp}}});
        }
        ++pos_;
      } else if (c == '[') {
        ++pos_;
        last_start = seq.size();
        Symbol set;
        if (peek() == '^') {
          set.negated = true;
          ++pos_;
        }
        while (peek() != ']') {
          if (!more()) fail(at, "unterminated character class");
          const size_t range_at = pos_;
          const uint32_t lo = parse_char();
          uint32_t hi = lo;
          if (peek() == '-' && pos_ + 1 < src_.size() && peek(1) != ']') {
            ++pos_;
            hi = parse_char();
            if (hi < lo) fail(range_at, "character range ends before it starts");
          }
          set.ranges.push_back({lo, hi});
        }
        ++pos_;
        set.ranges = normalized(std::move(set.ranges));
        count_symbols(1 + set.ranges.size());
        seq.push_back(std::move(set));
      } else if (c == '.') {
        ++pos_;
        last_start = seq.size();
        count_symbols(1);
        seq.push_back(Symbol{ElementKind::kCharSet, true, 0, {}});
      } else if (is_name_char(c)) {
        last_start = seq.size();
        const std::string ref_name = parse_name();
        count_symbols(1);
        seq.push_back(Symbol{ElementKind::kRuleRef, false, symbol_id(ref_name, at), {}});
      } else if (c == '(') {
        ++pos_;
        if (++depth_ > kMaxGroupNesting) fail(at, "groups nested too deeply");
        skip_space(true);
        const uint32_t group = generated_rule(name);
        parse_alternates(group, name, true);
        --depth_;
        if (peek() != ')') fail(pos_, "expected ')' to close the group opened at offset " + std::to_string(at));
        ++pos_;
        last_start = seq.size();
        count_symbols(1);
        seq.push_back(Symbol{ElementKind::kRuleRef, false, group, {}});
      } else if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        repeat(seq, last_start, c == '+' ? 1 : 0, c == '?' ? 1 : kUnbounded, name, at);
      } else if (c == '{') {
        ++pos_;
        skip_space(nested);
        const uint32_t min = parse_count();
        uint32_t max = min;
        skip_space(nested);
        if (peek() == ',') {
          ++pos_;
          skip_space(nested);
          max = (peek() >= '0' && peek() <= '9') ? parse_count() : kUnbounded;
          skip_space(nested);
        }
        if (peek() != '}') fail(pos_, "expected '}' to close the repetition");
        ++pos_;
        if (max < min) fail(at, "repetition {m,n} with n < m");
        repeat(seq, last_start, min, max, name, at);
      } else {
        break;
      }
      skip_space(nested);
    }
    return seq;
  }

  Grammar flatten(uint32_t root) const {
    Grammar g;
    g.root = root;
    g.rules.resize(rules_.size());
    for (uint32_t id = 0; id < rules_.size(); ++id) {
      g.rules[id].name = names_[id];
      for (const Sequence& alt : rules_[id]) {
        g.rules[id].alternatives.push_back(static_cast<uint32_t>(g.elements.size()));
        for (const Symbol& s : alt) {
          Element e;
          e.kind = s.kind;
          e.negated = s.negated;
          e.rule = s.rule;
          e.ranges_begin = static_cast<uint32_t>(g.ranges.size());
          g.ranges.insert(g.ranges.end(), s.ranges.begin(), s.ranges.end());
          e.ranges_end = static_cast<uint32_t>(g.ranges.size());
          g.elements.push_back(e);
        }
        g.elements.push_back(Element{});
      }
    }
    return g;
  }

  // A rule that can reach itself without consuming a character would make the matcher's
  // expansion loop forever; llama.cpp rejects such grammars too.
  void check_left_recursion(const Grammar& g) const {
    const size_t n = g.rules.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (uint32_t start : g.rules[r].alternatives) {
          uint32_t p = start;
          while (g.elements[p].kind == ElementKind::kRuleRef && nullable[g.elements[p].rule]) ++p;
          if (g.elements[p].kind == ElementKind::kEnd) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    // Edges r -> s where s can come first in r (after nullable references). Iterative DFS.
    std::vector<std::vector<uint32_t>> edges(n);
    for (size_t r = 0; r < n; ++r) {
      for (uint32_t start : g.rules[r].alternatives) {
        for (uint32_t p = start; g.elements[p].kind == ElementKind::kRuleRef; ++p) {
          edges[r].push_back(g.elements[p].rule);
          if (!nullable[g.elements[p].rule]) break;
        }
      }
    }
    std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the DFS path, 2 done
    std::vector<std::pair<uint32_t, size_t>> stack;
    for (uint32_t r0 = 0; r0 < n; ++r0) {
      if (color[r0] != 0) continue;
      stack.push_back({r0, 0});
      color[r0] = 1;
      while (!stack.empty()) {
        auto& [r, next] = stack.back();
        if (next == edges[r].size()) {
          color[r] = 2;
          stack.pop_back();
          continue;
        }
        const uint32_t s = edges[r][next++];
        if (color[s] == 1) {
          fail(definition_at_[s], "rule '" + names_[s] +
                                      "' is left-recursive (it can reach itself without consuming a "
                                      "character, e.g. a repeated item that can match nothing)");
        }
        if (color[s] == 0) {
          color[s] = 1;
          stack.push_back({s, 0});
        }
      }
    }
  }
};

}  // namespace

Grammar parse_gbnf(std::string_view text) { return Parser(text).run(); }

}  // namespace vks::grammar
