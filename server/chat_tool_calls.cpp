#include "server/chat_tool_calls.h"

#include <utility>

#include "server/http/tool_mapping.h"

namespace vks::server {

ChatToolCalls::ChatToolCalls(const chat::ModelChatTemplate& tmpl, std::optional<bool> enable_thinking)
    : reasoning_(chat::answer_reasoning_parser(tmpl.reasoning, enable_thinking)), calls_(tmpl.tool_format) {}

std::vector<proto::StreamEvent> ChatToolCalls::feed(const std::string& request_id, std::string_view text, bool end) {
  std::string content_storage;
  std::string_view content = text;
  if (reasoning_) {
    chat::ReasoningSplit split;
    reasoning_->feed(text, split);
    if (end) reasoning_->finish(split);
    content_storage = std::move(split.content);
    content = content_storage;
  }
  const size_t before = calls_.calls_seen();
  chat::ToolParse parsed;
  calls_.feed(content, parsed);
  if (end) calls_.finish(parsed);
  std::vector<proto::StreamEvent> events;
  events.reserve(parsed.calls.size());
  for (size_t i = 0; i < parsed.calls.size(); ++i) {
    proto::StreamEvent ev;
    ev.type = proto::StreamEventType::kToolCall;
    ev.call_index = static_cast<int32_t>(before + i);
    ev.call_id = http::tool_call_id(request_id, before + i);
    ev.call_name = std::move(parsed.calls[i].name);
    ev.call_arguments = std::move(parsed.calls[i].arguments);
    events.push_back(std::move(ev));
  }
  return events;
}

}  // namespace vks::server
