#pragma once
// The tool calls of a chat reply with tools (msgpack `chat` or an HTTP chat), as `tool_call`
// stream events (docs/PROTOCOL.md 4): the reply's text is split as the HTTP surfaces split it (a
// reasoning block first when the template thinks, then calls in the format of the template that
// rendered the chat: the served one or the request's own), and both
// parsers are incremental and exact, so each call's event follows the token event that completed
// it and a subscriber sees the same calls as a whole-reply parse. One per stream entry; loop
// thread only.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/model_chat_template.h"
#include "engine/chat/reasoning.h"
#include "engine/chat/tool_call_parser.h"
#include "protocol/responses.h"

namespace vks::server {

class ChatToolCalls {
 public:
  // enable_thinking: the request's switch (false on a template that reads it: the reply starts
  // outside the reasoning block).
  ChatToolCalls(const chat::ModelChatTemplate& tmpl, std::optional<bool> enable_thinking);

  // tool_call events (id and seq left to the caller) for the calls `text` completes; with `end`
  // (the reply is over) also what was held back settles (an unfinished call stays text).
  std::vector<proto::StreamEvent> feed(const std::string& request_id, std::string_view text, bool end);
  // Whether the reply called a tool (its finish reason is then tool_calls when it stopped).
  bool called() const { return calls_.calls_seen() > 0; }

 private:
  std::optional<chat::ReasoningParser> reasoning_;
  chat::ToolCallParser calls_;
};

}  // namespace vks::server
