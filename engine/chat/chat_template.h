#pragma once
// A model's chat template: renders a conversation into the prompt text the model was trained on,
// the way transformers' apply_chat_template does (bos_token, eos_token, add_generation_prompt).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/jinja_template.h"

namespace vks::chat {

struct ChatMessage {
  std::string role;
  std::string content;
};

class ChatTemplate {
 public:
  // Parses `source`; throws jinja::TemplateError naming the line. An absent bos/eos token is left
  // undefined in the template, as transformers does.
  static ChatTemplate parse(std::string source, std::optional<std::string> bos_token,
                            std::optional<std::string> eos_token);
  // The plain ChatML template (<|im_start|>role\ncontent<|im_end|>\n), the fallback when a model
  // has no usable template.
  static ChatTemplate chatml(std::optional<std::string> bos_token, std::optional<std::string> eos_token);
  static const std::string& chatml_source();

  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                     const jinja::RenderLimits& limits = {}) const;
  // Messages as JSON (a list of objects; tool_calls and other fields pass through). `extra` may
  // hold more variables (tools, enable_thinking, ...). Throws vks::Error / jinja::TemplateError.
  std::string render_json(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                          const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
                          const jinja::RenderLimits& limits = {}) const;

  // Renders sample conversations so that a template that parses but uses something the
  // interpreter lacks is caught at load, not at the first request. Throws jinja::TemplateError
  // with the first failure when no sample renders.
  void validate() const;

  const std::string& source() const { return source_; }
  const std::optional<std::string>& bos_token() const { return bos_; }
  const std::optional<std::string>& eos_token() const { return eos_; }

 private:
  std::string render_values(jinja::Value messages, bool add_generation_prompt, const jinja::Value::Dict* extra,
                            const jinja::RenderLimits& limits) const;

  std::string source_;
  jinja::Template template_;
  std::optional<std::string> bos_;
  std::optional<std::string> eos_;
};

}  // namespace vks::chat
