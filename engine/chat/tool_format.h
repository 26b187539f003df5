#pragma once
// How a model writes a tool call, learnt from its chat template rather than from a per-family
// table: the template renders probe conversations (an assistant turn with one, then two tool
// calls), and the text it produces shows the markers around each call, the JSON keys of the
// function name and its arguments, and whether the calls form one JSON array (Mistral's
// `[TOOL_CALLS][{...}, {...}]`). Templates with no tool syntax get the generic form
// (`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, Hermes/Qwen style), and the
// server describes the tools to the model itself (tool_prompt.h).
#include <string>

#include "engine/chat/chat_template.h"

namespace vks::chat {

struct ToolCallFormat {
  // True when the template itself renders `tools` and assistant `tool_calls`; false: the generic
  // form, described to the model by the server.
  bool native = false;
  std::string open;   // text before a call ("<tool_call>", "[TOOL_CALLS]"); "" = a call is JSON
                      // at the very start of the answer (Llama 3.1 style)
  std::string close;  // text after a call ("</tool_call>"); "" = none
  bool array = false; // after `open`, the calls are one JSON array of call objects
  std::string name_key = "name";
  std::string args_key = "arguments";  // "parameters" in Llama 3.1's templates
  bool name_first = true;              // the order the template writes the two keys in
  bool parallel = true;                // the template renders several calls in one turn

  bool operator==(const ToolCallFormat&) const = default;
};

// The generic format (used when the template has no tool syntax).
ToolCallFormat generic_tool_format();

// Renders the probes with `tmpl` and derives its format; the generic one when the template does
// not render tool calls as JSON it can find (or refuses the probes). Never throws.
ToolCallFormat detect_tool_format(const ChatTemplate& tmpl);

}  // namespace vks::chat
