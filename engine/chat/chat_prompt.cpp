#include "engine/chat/chat_prompt.h"

namespace vks::chat {

ChatPrompt tokenize_chat_prompt(std::string text, const Tokenizer& tokenizer) {
  ChatPrompt prompt;
  prompt.text = std::move(text);
  const TokenId bos = tokenizer.bos();
  const bool has_bos_token = bos >= 0 && bos < tokenizer.vocab_size();
  const std::string_view bos_text = has_bos_token ? tokenizer.token_text(bos) : std::string_view();
  const bool template_wrote_bos = !bos_text.empty() && prompt.text.compare(0, bos_text.size(), bos_text) == 0;
  prompt.added_bos = has_bos_token && tokenizer.add_bos_default() && !template_wrote_bos;
  prompt.ids = tokenizer.encode(prompt.text, prompt.added_bos, /*parse_special=*/true);
  return prompt;
}

ChatPrompt build_chat_prompt(const ChatTemplate& model_template, const std::vector<ChatMessage>& messages,
                             bool add_generation_prompt, const std::optional<std::string>& override_source,
                             const Tokenizer& tokenizer) {
  if (override_source) {
    const ChatTemplate custom = ChatTemplate::parse(*override_source, model_template.bos_token(), model_template.eos_token());
    return tokenize_chat_prompt(custom.render(messages, add_generation_prompt), tokenizer);
  }
  return tokenize_chat_prompt(model_template.render(messages, add_generation_prompt), tokenizer);
}

}  // namespace vks::chat
