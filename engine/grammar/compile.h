#pragma once
// One entry point for a request's constraint: a GBNF grammar or a JSON Schema (JSON text).
#include <cstddef>
#include <memory>
#include <string_view>

#include "engine/grammar/grammar.h"

namespace vks::grammar {

inline constexpr size_t kMaxConstraintBytes = 256 * 1024;

// Exactly one of the two must be non-empty. Throws CompileError (message starts with the field
// name, "grammar" or "json_schema", and gives the position) on any problem.
std::shared_ptr<const Grammar> compile_constraint(std::string_view gbnf, std::string_view json_schema);

}  // namespace vks::grammar
