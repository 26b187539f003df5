#pragma once
// A chat request's prompt: the conversation rendered with the model's chat template (or a
// request's own template), then tokenized so that the control tokens the template writes
// (<|eot_id|>, <|im_start|>, ...) become control tokens. Runs off the socket loop thread.
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace vks::chat {

struct ChatPrompt {
  std::string text;
  std::vector<TokenId> ids;
  bool added_bos = false;  // BOS was prepended (the template did not write it)
};

// Renders `messages` with `override_source` when given (parsed with the model template's
// bos/eos tokens) else with `model_template`, and tokenizes the text with special-token parsing.
// BOS is prepended when the tokenizer adds one by default and the text does not already start
// with the BOS token's text (as llama.cpp's server does, so there is never a double BOS).
// Throws jinja::TemplateError (bad override, or the template refused the conversation).
// Tokenizes rendered prompt text as build_chat_prompt does (special tokens parsed, BOS rule).
ChatPrompt tokenize_chat_prompt(std::string text, const Tokenizer& tokenizer);

ChatPrompt build_chat_prompt(const ChatTemplate& model_template, const std::vector<ChatMessage>& messages,
                             bool add_generation_prompt, const std::optional<std::string>& override_source,
                             const Tokenizer& tokenizer);

}  // namespace vks::chat
