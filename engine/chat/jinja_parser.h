#pragma once
#include <string_view>

#include "engine/chat/jinja_ast.h"

namespace vks::jinja {

// Parses a template into statements. Throws TemplateError naming the line of the problem.
// Nesting deeper than max_depth (brackets, operators, blocks) is refused, so hostile input
// cannot exhaust the stack.
Body parse_template(std::string_view source, int max_depth = 200);

}  // namespace vks::jinja
