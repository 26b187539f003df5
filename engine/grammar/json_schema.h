#pragma once
// JSON Schema -> GBNF (the grammar of the JSON texts the schema accepts; parse with parse_gbnf).
// Supported: type (one or a list), properties + required (emitted in declaration order),
// additionalProperties (false, or a schema for objects without properties), enum, const, anyOf
// (and oneOf, treated as anyOf), $ref to "#", "#/$defs/..." or "#/definitions/...", arrays with
// items/minItems/maxItems, strings with minLength/maxLength or a simple regex `pattern`
// (literals, classes, . \d \w \s, groups, |, * + ? {m,n}, ^ and $ at the ends), integers with
// minimum/maximum/exclusive bounds, numbers with bounds (then only integral values in range are
// produced), boolean, null. {} / true accept any JSON value; {"type": "object"} any JSON object.
// Annotations (title, description, default, examples, format, $schema, $id, $comment) are
// ignored. Keywords that constrain values in ways not supported (allOf, not, if/then/else,
// uniqueItems, multipleOf, minProperties, ...) are rejected rather than silently ignored, so
// whatever the grammar produces validates against the schema.
// Errors: vks::grammar::CompileError naming the schema path; for text input, JSON syntax errors
// carry the byte offset.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"

namespace vks::grammar {

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);  // properties in declared order
std::string json_schema_text_to_gbnf(std::string_view schema_json);

}  // namespace vks::grammar
