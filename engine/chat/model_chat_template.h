#pragma once
// The chat template a model is served with: the GGUF's tokenizer.chat_template, a user-given
// file, or ChatML when the model has none or the interpreter cannot handle it.
#include <memory>
#include <optional>
#include <string>

#include "engine/chat/chat_template.h"
#include "engine/chat/reasoning.h"
#include "engine/chat/request_template_cache.h"
#include "engine/chat/tool_format.h"
#include "engine/gguf/gguf_file.h"

namespace vks::chat {

struct ModelChatTemplate {
  ChatTemplate tmpl;
  std::string origin;  // "model", "file PATH" or "ChatML fallback"
  // Why the fallback was taken (empty when the model's or the user's template is used); the
  // daemon logs it at load.
  std::string fallback_reason;
  // How this template writes tool calls (probed once at load; tool_format.h).
  ToolCallFormat tool_format;
  // Its reasoning block, if it thinks (probed once at load; reasoning.h).
  ReasoningFormat reasoning;
  // A served template's cache of the templates its requests send (request_chat_template); null
  // for those templates themselves.
  std::shared_ptr<RequestTemplateCache> request_templates;
};

// bos/eos token text of the GGUF's vocabulary (nullopt when the id or the tokens are absent).
std::optional<std::string> gguf_token_text(const gguf::GgufFile& file, std::string_view id_key);

// The GGUF's tokenizer.chat_template text, if any.
std::optional<std::string> gguf_chat_template_source(const gguf::GgufFile& file);

// Chooses and validates the template at load. A template_file that cannot be read, parsed or
// rendered throws vks::Error (the user asked for it explicitly); a model template that fails
// falls back to ChatML with fallback_reason set.
ModelChatTemplate load_model_chat_template(const gguf::GgufFile& file, const std::string& template_file = "");

// Reads a template file (vks::Error kIo / kInvalidArgument when unreadable or over 1 MiB).
std::string read_template_file(const std::string& path);

}  // namespace vks::chat
