#include "engine/chat/jinja_lexer.h"

#include <cctype>
#include <cstring>

#include "engine/chat/jinja_error.h"

namespace vks::jinja {
namespace {

enum class TagKind { kExpr, kStmt, kComment };

// One piece of the template before whitespace control: literal text, or a tag with its tokens.
struct Segment {
  bool is_text = true;
  std::string text;
  bool starts_line = false;  // text begins at the template start or right after a newline
  TagKind kind = TagKind::kExpr;
  bool strip_before = false;  // {%- / {{- / {#-
  bool keep_before = false;   // {%+ : disables lstrip_blocks
  bool strip_after = false;   // -%} / -}} / -#}
  std::vector<Token> tokens;
  int line = 1;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Segment> segments() {
    std::vector<Segment> out;
    while (pos_ < src_.size()) {
      const size_t open = find_open(pos_);
      if (open > pos_) {
        Segment text;
        text.text = std::string(src_.substr(pos_, open - pos_));
        text.starts_line = pos_ == 0 || src_[pos_ - 1] == '\n';
        text.line = line_;
        advance_to(open);
        out.push_back(std::move(text));
      }
      if (pos_ >= src_.size()) break;
      out.push_back(lex_tag());
      if (is_raw_open(out.back())) lex_raw_body(out);
    }
    return out;
  }

 private:
  size_t find_open(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  void advance_to(size_t target) {
    for (; pos_ < target; ++pos_) {
      if (src_[pos_] == '\n') ++line_;
    }
  }

  Segment lex_tag() {
    Segment tag;
    tag.is_text = false;
    tag.line = line_;
    const char opener = src_[pos_ + 1];
    tag.kind = opener == '{' ? TagKind::kExpr : opener == '%' ? TagKind::kStmt : TagKind::kComment;
    advance_to(pos_ + 2);
    if (pos_ < src_.size() && src_[pos_] == '-') {
      tag.strip_before = true;
      ++pos_;
    } else if (pos_ < src_.size() && src_[pos_] == '+') {
      tag.keep_before = true;
      ++pos_;
    }
    if (tag.kind == TagKind::kComment) {
      const size_t close = src_.find("#}", pos_);
      if (close == std::string_view::npos) throw TemplateError(tag.line, "unterminated comment");
      tag.strip_after = close > pos_ && src_[close - 1] == '-';
      advance_to(close + 2);
      return tag;
    }
    const char closer = tag.kind == TagKind::kExpr ? '}' : '%';
    int brace_depth = 0;  // `}}` closes the tag only outside a dict literal
    for (;;) {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size()) {
        throw TemplateError(tag.line, std::string("unterminated ") + (tag.kind == TagKind::kExpr ? "{{" : "{%"));
      }
      const bool closing_here = src_.compare(pos_, 2, std::string{closer, '}'}) == 0 && (closer == '%' || brace_depth == 0);
      const bool closing_strip = src_[pos_] == '-' && src_.compare(pos_ + 1, 2, std::string{closer, '}'}) == 0 &&
                                 (closer == '%' || brace_depth == 0);
      if (closing_here || closing_strip) {
        tag.strip_after = closing_strip;
        advance_to(pos_ + (closing_strip ? 3 : 2));
        return tag;
      }
      Token token = lex_token();
      if (token.type == TokenType::kOperator) {
        if (token.text == "{") ++brace_depth;
        if (token.text == "}") --brace_depth;
      }
      tag.tokens.push_back(std::move(token));
    }
  }

  Token lex_token() {
    const int line = line_;
    const char c = src_[pos_];
    if (c == '\'' || c == '"') return lex_string(c);
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) return lex_number();
    if (is_name_start(c)) {
      const size_t start = pos_;
      while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
      return {TokenType::kName, std::string(src_.substr(start, pos_ - start)), line};
    }
    static const char* const kTwoChar[] = {"**", "//", "==", "!=", "<=", ">="};
    for (const char* op : kTwoChar) {
      if (src_.compare(pos_, 2, op) == 0) {
        pos_ += 2;
        return {TokenType::kOperator, op, line};
      }
    }
    if (std::strchr("+-*/%~<>=()[]{}.,:|", c) != nullptr) {
      ++pos_;
      return {TokenType::kOperator, std::string(1, c), line};
    }
    throw TemplateError(line, std::string("unexpected character '") + c + "' in tag");
  }

  Token lex_string(char quote) {
    const int line = line_;
    std::string value;
    ++pos_;
    for (;;) {
      if (pos_ >= src_.size()) throw TemplateError(line, "unterminated string literal");
      const char c = src_[pos_];
      if (c == quote) {
        ++pos_;
        return {TokenType::kString, std::move(value), line};
      }
      if (c == '\n') ++line_;
      if (c == '\\' && pos_ + 1 < src_.size()) {
        const char e = src_[pos_ + 1];
        pos_ += 2;
        switch (e) {
          case 'n': value += '\n'; break;
          case 't': value += '\t'; break;
          case 'r': value += '\r'; break;
          case 'b': value += '\b'; break;
          case 'f': value += '\f'; break;
          case '0': value += '\0'; break;
          case '\\': value += '\\'; break;
          case '\'': value += '\''; break;
          case '"': value += '"'; break;
          case '\n': ++line_; break;  // line continuation
          default:
            value += '\\';  // Python keeps unknown escapes as written
            value += e;
        }
        continue;
      }
      value += c;
      ++pos_;
    }
  }

  Token lex_number() {
    const int line = line_;
    const size_t start = pos_;
    bool is_float = false;
    while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) != 0 || src_[pos_] == '_')) ++pos_;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])) != 0) {
      is_float = true;
      ++pos_;
      while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_])) != 0) ++pos_;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p])) != 0) {
        is_float = true;
        pos_ = p;
        while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_])) != 0) ++pos_;
      }
    }
    std::string text;
    for (size_t i = start; i < pos_; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    return {is_float ? TokenType::kFloat : TokenType::kInt, text, line};
  }

  static bool is_raw_open(const Segment& tag) {
    return !tag.is_text && tag.kind == TagKind::kStmt && tag.tokens.size() == 1 &&
           tag.tokens[0].type == TokenType::kName && tag.tokens[0].text == "raw";
  }

  // Everything up to {% endraw %} is text, tags included.
  void lex_raw_body(std::vector<Segment>& out) {
    const int line = out.back().line;
    out.pop_back();
    for (size_t search = pos_;;) {
      const size_t open = src_.find("{%", search);
      if (open == std::string_view::npos) throw TemplateError(line, "unterminated raw block");
      size_t p = open + 2;
      bool strip_before = false;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) strip_before = src_[p++] == '-';
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (src_.compare(p, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      p += 6;
      while (p < src_.size() && is_space(src_[p])) ++p;
      bool strip_after = false;
      if (p < src_.size() && src_[p] == '-') {
        strip_after = true;
        ++p;
      }
      if (src_.compare(p, 2, "%}") != 0) {
        search = open + 2;
        continue;
      }
      Segment text;
      text.text = std::string(src_.substr(pos_, open - pos_));
      text.line = line_;
      if (strip_before) {
        while (!text.text.empty() && is_space(text.text.back())) text.text.pop_back();
      }
      advance_to(p + 2);
      out.push_back(std::move(text));
      Segment end;  // an empty statement tag so that whitespace control after endraw applies
      end.is_text = false;
      end.kind = TagKind::kComment;
      end.strip_after = strip_after;
      end.line = line_;
      out.push_back(std::move(end));
      return;
    }
  }

  std::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
};

// trim_blocks, lstrip_blocks and the - modifiers, applied to the text between tags.
void control_whitespace(std::vector<Segment>& segments) {
  for (size_t i = 0; i < segments.size(); ++i) {
    Segment& text = segments[i];
    if (!text.is_text) continue;
    const Segment* before = i > 0 ? &segments[i - 1] : nullptr;
    const Segment* after = i + 1 < segments.size() ? &segments[i + 1] : nullptr;
    std::string& s = text.text;
    size_t begin = 0;
    size_t end = s.size();
    if (after != nullptr && !after->is_text) {
      if (after->strip_before) {
        while (end > 0 && is_space(s[end - 1])) --end;
      } else if (after->kind != TagKind::kExpr && !after->keep_before) {
        size_t p = end;
        while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) --p;
        if ((p > 0 && s[p - 1] == '\n') || (p == 0 && text.starts_line)) end = p;
      }
    }
    if (before != nullptr && !before->is_text) {
      if (before->strip_after) {
        while (begin < end && is_space(s[begin])) ++begin;
      } else if (before->kind != TagKind::kExpr) {
        if (begin < end && s[begin] == '\n') {
          ++begin;
        } else if (begin + 1 < end && s[begin] == '\r' && s[begin + 1] == '\n') {
          begin += 2;
        }
      }
    }
    s = begin < end ? s.substr(begin, end - begin) : std::string();
  }
}

}  // namespace

std::vector<Token> lex_template(std::string_view source) {
  Lexer lexer(source);
  std::vector<Segment> segments = lexer.segments();
  control_whitespace(segments);
  std::vector<Token> tokens;
  for (auto& seg : segments) {
    if (seg.is_text) {
      if (!seg.text.empty()) tokens.push_back({TokenType::kText, std::move(seg.text), seg.line});
      continue;
    }
    if (seg.kind == TagKind::kComment) continue;
    const bool expr = seg.kind == TagKind::kExpr;
    tokens.push_back({expr ? TokenType::kExprOpen : TokenType::kStmtOpen, "", seg.line});
    for (auto& t : seg.tokens) tokens.push_back(std::move(t));
    tokens.push_back({expr ? TokenType::kExprClose : TokenType::kStmtClose, "", seg.line});
  }
  tokens.push_back({TokenType::kEnd, "", 0});
  return tokens;
}

}  // namespace vks::jinja
