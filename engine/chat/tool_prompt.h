#pragma once
// The conversation a chat template renders when tools are involved. Templates expect a call's
// arguments as an object (they apply `tojson`), while OpenAI clients send them as a JSON string:
// they are parsed here. A template with no tool syntax (the generic format) gets the tools
// described in its system message, earlier calls written out in the generic format and tool
// results as <tool_response> user turns, so any model can be asked to call tools.
#include <nlohmann/json.hpp>

#include "engine/chat/tool_format.h"

namespace vks::chat {

// `messages`: [{role, content, tool_calls?, tool_call_id?, name?}] with OpenAI-shaped tool_calls.
// `offer_tools`: the tools are described to the model (tool_choice is not "none").
// Throws vks::Error (kInvalidArgument) naming the message of a malformed tool call.
nlohmann::ordered_json prepare_tool_messages(nlohmann::ordered_json messages, const nlohmann::ordered_json& tools,
                                             bool offer_tools, const ToolCallFormat& format);

// The generic format's description of `tools` (a system prompt section).
std::string generic_tools_prompt(const nlohmann::ordered_json& tools);

}  // namespace vks::chat
