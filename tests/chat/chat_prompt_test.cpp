// A chat prompt turns the template's control-token text into control tokens and never doubles BOS.
#include <gtest/gtest.h>

#include "engine/chat/chat_prompt.h"
#include "engine/gguf/gguf_file.h"
#include "tests/common/test_models.h"

namespace {

using vks::chat::ChatMessage;
using vks::chat::ChatTemplate;

struct Llama2Vocab {
  vks::gguf::GgufFile file = vks::gguf::GgufFile::open(vks::test::model_path("llama2-vocab.gguf"));
  std::unique_ptr<vks::Tokenizer> tok = vks::Tokenizer::from_gguf(file);
};

const std::vector<ChatMessage> kConversation = {{"user", "Hello"}};

TEST(ChatPrompt, TemplateWrittenBosIsNotDoubled) {
  Llama2Vocab v;
  const auto tmpl = ChatTemplate::parse("{{ bos_token }}{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}", "<s>", "</s>");
  const auto prompt = vks::chat::build_chat_prompt(tmpl, kConversation, true, std::nullopt, *v.tok);
  EXPECT_EQ(prompt.text, "<s>[INST] Hello [/INST]");
  EXPECT_FALSE(prompt.added_bos);
  ASSERT_GE(prompt.ids.size(), 2u);
  EXPECT_EQ(prompt.ids[0], v.tok->bos());
  EXPECT_NE(prompt.ids[1], v.tok->bos());
  EXPECT_EQ(prompt.ids, v.tok->encode(prompt.text, false, true));
}

TEST(ChatPrompt, BosAddedWhenTheTemplateDoesNotWriteIt) {
  Llama2Vocab v;
  const auto tmpl = ChatTemplate::chatml("<s>", "</s>");
  const auto prompt = vks::chat::build_chat_prompt(tmpl, kConversation, true, std::nullopt, *v.tok);
  EXPECT_EQ(prompt.text, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_TRUE(prompt.added_bos);
  EXPECT_EQ(prompt.ids, v.tok->encode(prompt.text, true, true));
}

TEST(ChatPrompt, ControlTokenTextBecomesControlTokens) {
  Llama2Vocab v;
  const auto tmpl = ChatTemplate::parse("{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}", "<s>", "</s>");
  const auto prompt = vks::chat::build_chat_prompt(tmpl, kConversation, false, std::nullopt, *v.tok);
  ASSERT_FALSE(prompt.ids.empty());
  EXPECT_EQ(prompt.ids.back(), v.tok->eos());  // "</s>" is the EOS token, not the characters
}

TEST(ChatPrompt, RequestTemplateOverridesTheModelsAndErrorsNameTheLine) {
  Llama2Vocab v;
  const auto tmpl = ChatTemplate::chatml("<s>", "</s>");
  const auto prompt = vks::chat::build_chat_prompt(tmpl, kConversation, true, std::string("{{ messages[0].content | upper }}"), *v.tok);
  EXPECT_EQ(prompt.text, "HELLO");
  EXPECT_THROW(vks::chat::build_chat_prompt(tmpl, kConversation, true, std::string("\n{{ raise_exception('no') }}"), *v.tok),
               vks::jinja::TemplateError);
}

}  // namespace
