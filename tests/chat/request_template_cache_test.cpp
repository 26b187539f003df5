// RequestTemplateCache: a request's own template is parsed and probed once per text (the same
// formats as a served template's probe), the least recently used text goes first past the bound,
// a probe cut short by its render scope is not kept, and a template that does not parse throws.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>

#include "engine/chat/jinja_budget.h"
#include "engine/chat/jinja_error.h"
#include "engine/chat/model_chat_template.h"

namespace vks::chat {
namespace {

// Llama 3.1's tool form: a call is JSON at the start of the answer, arguments under "parameters".
const char* kLlama31Like =
    "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
    "{% if m.tool_calls %}{% set c = m.tool_calls[0].function %}"
    "{{ '{\"name\": \"' + c.name + '\", \"parameters\": ' + (c.arguments | tojson) + '}' }}"
    "{% else %}{{ m.content }}{% endif %}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}";

ModelChatTemplate served() {
  return {ChatTemplate::chatml(std::nullopt, std::string("<|im_end|>")), "test", "", generic_tool_format(), {},
          std::make_shared<RequestTemplateCache>()};
}

TEST(RequestTemplateCache, ProbesEachTextOnceWithTheServedProbe) {
  const ModelChatTemplate model = served();
  auto first = request_chat_template(kLlama31Like, model);
  EXPECT_EQ(first->tool_format, detect_tool_format(ChatTemplate::parse(kLlama31Like, std::nullopt, std::string("<|im_end|>"))));
  EXPECT_EQ(first->tool_format.args_key, "parameters");
  EXPECT_NE(first->tool_format, model.tool_format);
  EXPECT_EQ(first->tmpl.eos_token(), model.tmpl.eos_token());
  auto again = request_chat_template(kLlama31Like, model);
  EXPECT_EQ(again.get(), first.get());
  EXPECT_EQ(model.request_templates->probed(), 1u);
}

TEST(RequestTemplateCache, KeepsTheMostRecentlyUsedTexts) {
  const ModelChatTemplate model = served();
  auto text = [](size_t i) { return "{{ messages[0].content }}" + std::to_string(i); };
  for (size_t i = 0; i < RequestTemplateCache::kCapacity; ++i) (void)request_chat_template(text(i), model);
  (void)request_chat_template(text(0), model);                                   // 0 is the most recent now
  (void)request_chat_template(text(RequestTemplateCache::kCapacity), model);   // evicts 1
  const size_t probed = model.request_templates->probed();
  EXPECT_EQ(probed, RequestTemplateCache::kCapacity + 1);
  (void)request_chat_template(text(0), model);
  EXPECT_EQ(model.request_templates->probed(), probed);
  (void)request_chat_template(text(1), model);
  EXPECT_EQ(model.request_templates->probed(), probed + 1);
}

TEST(RequestTemplateCache, ACutProbeIsNotKept) {
  const ModelChatTemplate model = served();
  std::atomic<bool> cancelled{true};
  {
    jinja::RenderScope scope(std::chrono::seconds(2), &cancelled);
    (void)request_chat_template(kLlama31Like, model);
  }
  auto fresh = request_chat_template(kLlama31Like, model);
  EXPECT_EQ(model.request_templates->probed(), 2u);
  EXPECT_EQ(fresh->tool_format.args_key, "parameters");
}

TEST(RequestTemplateCache, ATemplateThatDoesNotParseThrows) {
  const ModelChatTemplate model = served();
  EXPECT_THROW((void)request_chat_template("{% for %}", model), jinja::TemplateError);
  EXPECT_EQ(model.request_templates->probed(), 0u);
}

}  // namespace
}  // namespace vks::chat
