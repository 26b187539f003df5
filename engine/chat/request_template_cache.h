#pragma once
// The chat templates that requests send (their own `chat_template`), parsed and probed for their
// tool-call and reasoning formats as a served template is at load (tool_format.h, reasoning.h),
// once per template text: an agent sends the same template with every request, and its answer
// must be parsed in that template's format, not the served one's. One per served model (the
// model's bos/eos tokens go into the parse); bounded to the few most recently used texts;
// thread-safe (pool threads render).
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace vks::chat {

class ChatTemplate;
struct ModelChatTemplate;

class RequestTemplateCache {
 public:
  static constexpr size_t kCapacity = 8;

  // `source` parsed with `served`'s bos/eos tokens and probed, or the cached result. The probes
  // render in the caller's jinja::RenderScope, so they are bounded like the request's renders; a
  // result the scope cut short is not kept. Throws jinja::TemplateError when `source` does not parse.
  std::shared_ptr<const ModelChatTemplate> get(const std::string& source, const ChatTemplate& served);

  size_t probed() const;  // templates parsed and probed so far (cache misses)

 private:
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const ModelChatTemplate>>> entries_;  // most recent first
  size_t probed_ = 0;
};

// A request's own template `source` for a model served with `served`: through the model's cache
// (ModelChatTemplate::request_templates) when it has one, else parsed and probed now. Throws
// jinja::TemplateError when `source` does not parse.
std::shared_ptr<const ModelChatTemplate> request_chat_template(const std::string& source, const ModelChatTemplate& served);

}  // namespace vks::chat
