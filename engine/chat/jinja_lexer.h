#pragma once
// Splits a Jinja template into text and tag tokens, applying whitespace control the way
// transformers sets jinja2 up (trim_blocks, lstrip_blocks) plus the `-` and `+` tag modifiers.
#include <string>
#include <string_view>
#include <vector>

namespace vks::jinja {

enum class TokenType {
  kText,       // literal output
  kExprOpen,   // {{
  kExprClose,  // }}
  kStmtOpen,   // {%
  kStmtClose,  // %}
  kName,
  kString,     // text holds the unescaped value
  kInt,
  kFloat,
  kOperator,   // punctuation: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } . , : |
  kEnd,
};

struct Token {
  TokenType type;
  std::string text;
  int line;
};

// Throws TemplateError (unterminated tag, string or comment; stray character).
std::vector<Token> lex_template(std::string_view source);

}  // namespace vks::jinja
