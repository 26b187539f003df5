// The 20 chat renderings of reference/chat-templates.json (rendered by @huggingface/jinja and
// jinja2 as transformers sets it up) must come out byte for byte.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "tests/common/test_models.h"

namespace {

using nlohmann::ordered_json;

ordered_json load_cases() {
  std::ifstream in(vks::test::model_path("reference/chat-templates.json"));
  if (!in) return ordered_json::array();
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ordered_json::parse(buffer.str());
}

std::optional<std::string> optional_string(const ordered_json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<std::string>();
}

TEST(ChatReference, RendersAllTwentyCasesExactly) {
  const ordered_json cases = load_cases();
  ASSERT_EQ(cases.size(), 20u) << "reference/chat-templates.json missing or changed";
  for (const auto& c : cases) {
    SCOPED_TRACE(c["template_name"].get<std::string>() + " / " + c["case"].get<std::string>());
    const auto tmpl = vks::chat::ChatTemplate::parse(c["template"].get<std::string>(), optional_string(c["bos_token"]),
                                                     optional_string(c["eos_token"]));
    std::string rendered;
    ASSERT_NO_THROW(rendered = tmpl.render_json(c["messages"], c["add_generation_prompt"].get<bool>()));
    EXPECT_EQ(rendered, c["expected"].get<std::string>());
  }
}

TEST(ChatReference, EveryReferenceTemplateValidates) {
  for (const auto& c : load_cases()) {
    const auto tmpl = vks::chat::ChatTemplate::parse(c["template"].get<std::string>(), optional_string(c["bos_token"]),
                                                     optional_string(c["eos_token"]));
    EXPECT_NO_THROW(tmpl.validate()) << c["template_name"];
  }
}

TEST(ChatReference, ChatMessagesOverloadMatchesJson) {
  const ordered_json cases = load_cases();
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    std::vector<vks::chat::ChatMessage> messages;
    for (const auto& m : c["messages"]) messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    const auto tmpl = vks::chat::ChatTemplate::parse(c["template"].get<std::string>(), optional_string(c["bos_token"]),
                                                     optional_string(c["eos_token"]));
    EXPECT_EQ(tmpl.render(messages, c["add_generation_prompt"].get<bool>()), c["expected"].get<std::string>());
  }
}

TEST(ChatReference, ChatmlFallbackMatchesTheReferenceChatml) {
  for (const auto& c : load_cases()) {
    if (c["template_name"] != "chatml") continue;
    const auto tmpl = vks::chat::ChatTemplate::chatml(optional_string(c["bos_token"]), optional_string(c["eos_token"]));
    EXPECT_EQ(tmpl.render_json(c["messages"], c["add_generation_prompt"].get<bool>()), c["expected"].get<std::string>());
  }
}

}  // namespace
