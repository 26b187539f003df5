#pragma once
// The grammar of a tool call that must happen (tool_choice "required" or a named function):
// from the first token, the model can only write the call markers of its template's format
// (tool_format.h) around JSON whose name is one of the allowed tools and whose arguments validate
// against that tool's JSON Schema (engine/grammar's JSON Schema compiler, properties in declared
// order). The answer then parses as calls by construction.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/tool_format.h"

namespace vks::chat {

struct ToolSpec {
  std::string name;
  nlohmann::ordered_json parameters;  // a JSON Schema (an object schema; {} when the tool has none)
};

// OpenAI-shaped tools [{"type": "function", "function": {"name", "description", "parameters"}}]
// -> specs. Throws vks::Error (kInvalidArgument) whose message names the offending tool.
std::vector<ToolSpec> parse_tools(const nlohmann::ordered_json& tools);

// GBNF (start rule root) for one call to one of `allowed`, or several when `parallel` and the
// format allows it. Throws vks::grammar::CompileError when a tool's schema cannot be compiled.
std::string tool_call_gbnf(const ToolCallFormat& format, const std::vector<ToolSpec>& allowed, bool parallel);

// The lazy form for tool_choice "auto" (engine/grammar/lazy_grammar.h): the answer is free text
// until the model starts a call (the format's open marker; for formats without one, JSON at the
// very start of the answer), and from there on it is what tool_call_gbnf allows, so a call the
// model starts always parses and validates. Throws as tool_call_gbnf.
std::string tool_call_lazy_gbnf(const ToolCallFormat& format, const std::vector<ToolSpec>& allowed, bool parallel);

}  // namespace vks::chat
