#pragma once
#include <stdexcept>
#include <string>

#include "engine/common/error.h"

namespace vks::jinja {

// A template that cannot be parsed or rendered. The message names the template line, e.g.
// "template line 3: unknown filter 'frobnicate'".
class TemplateError : public vks::Error {
 public:
  TemplateError(int line, const std::string& message)
      : vks::Error(ErrorCode::kInvalidArgument, "template line " + std::to_string(line) + ": " + message),
        line_(line),
        bare_message_(message) {}
  int line() const noexcept { return line_; }
  const std::string& bare_message() const noexcept { return bare_message_; }

 private:
  int line_;
  std::string bare_message_;
};

// Thrown by builtins that do not know the template line; the evaluator rethrows it as a
// TemplateError naming the line of the expression being evaluated.
class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace vks::jinja
