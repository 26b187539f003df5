#include "engine/chat/request_template_cache.h"

#include "engine/chat/jinja_budget.h"
#include "engine/chat/model_chat_template.h"

namespace vks::chat {
namespace {

std::shared_ptr<ModelChatTemplate> probed_template(const std::string& source, const ChatTemplate& served) {
  auto made = std::make_shared<ModelChatTemplate>(
      ModelChatTemplate{ChatTemplate::parse(source, served.bos_token(), served.eos_token()), "request", "", {}, {}, nullptr});
  made->tool_format = detect_tool_format(made->tmpl);
  made->reasoning = detect_reasoning_format(made->tmpl);
  return made;
}

}  // namespace

std::shared_ptr<const ModelChatTemplate> RequestTemplateCache::get(const std::string& source, const ChatTemplate& served) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first != source) continue;
      entries_.splice(entries_.begin(), entries_, it);
      return it->second;
    }
  }
  // Parsed and probed outside the lock: two requests with a new template may both probe it once.
  std::shared_ptr<const ModelChatTemplate> made = probed_template(source, served);
  std::lock_guard<std::mutex> lock(mutex_);
  ++probed_;
  if (jinja::render_scope_spent()) return made;  // a probe may have been cut: not for other requests
  entries_.emplace_front(source, made);
  if (entries_.size() > kCapacity) entries_.pop_back();
  return made;
}

std::shared_ptr<const ModelChatTemplate> request_chat_template(const std::string& source, const ModelChatTemplate& served) {
  if (served.request_templates) return served.request_templates->get(source, served.tmpl);
  return probed_template(source, served.tmpl);
}

size_t RequestTemplateCache::probed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return probed_;
}

}  // namespace vks::chat
