// `vkstream template` prints exactly what the reference renderer produced, from a template file
// or from a GGUF's tokenizer.chat_template, and fails with a clear message on bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/clients/process_util.h"
#include "tests/common/test_models.h"

namespace {

using nlohmann::ordered_json;
using vks::test::run_process;

std::string vkstream() { return vks::test::build_dir() + "/clients/cli/vkstream"; }

ordered_json load_cases() {
  std::ifstream in(vks::test::model_path("reference/chat-templates.json"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ordered_json::parse(buffer.str());
}

std::string write_file(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(TemplateCli, TemplateFileRendersEveryReferenceCase) {
  const std::string dir = vks::test::make_temp_dir("vks-template-cli");
  const ordered_json cases = load_cases();
  ASSERT_EQ(cases.size(), 20u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["template_name"].get<std::string>() + " / " + c["case"].get<std::string>());
    std::vector<std::string> argv = {vkstream(), "template", "--template-file",
                                     write_file(dir, "t.jinja", c["template"].get<std::string>()), "--messages",
                                     write_file(dir, "m.json", c["messages"].dump())};
    if (!c["bos_token"].is_null()) argv.insert(argv.end(), {"--bos", c["bos_token"].get<std::string>()});
    if (!c["eos_token"].is_null()) argv.insert(argv.end(), {"--eos", c["eos_token"].get<std::string>()});
    if (c["add_generation_prompt"].get<bool>()) argv.push_back("--add-generation-prompt");
    const auto result = run_process(argv);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, c["expected"].get<std::string>());  // exactly: no newline added
  }
}

TEST(TemplateCli, ModelTemplateMatchesTheReference) {
  const std::string dir = vks::test::make_temp_dir("vks-template-cli");
  // The vocabulary files carry the same templates as the reference's llama3 and qwen2.5 cases.
  const std::pair<const char*, const char*> models[] = {{"llama3-vocab.gguf", "llama3"}, {"qwen2-vocab.gguf", "qwen2.5"}};
  int checked = 0;
  for (const auto& c : load_cases()) {
    for (const auto& [file, name] : models) {
      // Two cases per model keep the test short (each run parses a 150k-token vocabulary).
      if (c["template_name"] != name || (c["case"] != "no_system" && c["case"] != "assistant_special_chars")) continue;
      SCOPED_TRACE(std::string(file) + " / " + c["case"].get<std::string>());
      std::vector<std::string> argv = {vkstream(), "template", "--model", vks::test::model_path(file), "--messages",
                                       write_file(dir, "m.json", c["messages"].dump())};
      if (c["add_generation_prompt"].get<bool>()) argv.push_back("--add-generation-prompt");
      const auto result = run_process(argv);
      ASSERT_EQ(result.exit_code, 0) << result.err;
      EXPECT_EQ(result.out, c["expected"].get<std::string>());
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);
}

TEST(TemplateCli, MessagesObjectPassesExtraVariables) {
  const std::string dir = vks::test::make_temp_dir("vks-template-cli");
  const std::string tmpl = write_file(dir, "t.jinja", "{{ messages | length }}{% if tools %}{{ tools | tojson }}{% endif %}");
  const std::string messages = write_file(dir, "m.json", R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f"}]})");
  const auto result = run_process({vkstream(), "template", "--template-file", tmpl, "--messages", messages});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "1[{\"name\": \"f\"}]");
}

TEST(TemplateCli, BadInputGivesAClearError) {
  const std::string dir = vks::test::make_temp_dir("vks-template-cli");
  const std::string messages = write_file(dir, "m.json", R"([{"role": "user", "content": "x"}])");
  const std::string broken = write_file(dir, "broken.jinja", "ok\n{% for m in messages %}{{ m | nosuchfilter }}{% endfor %}");
  auto result = run_process({vkstream(), "template", "--template-file", broken, "--messages", messages});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("template line 2: unknown filter 'nosuchfilter'"), std::string::npos) << result.err;

  result = run_process({vkstream(), "template", "--template-file", broken, "--messages", write_file(dir, "bad.json", "[{")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("not valid JSON"), std::string::npos) << result.err;

  result = run_process({vkstream(), "template", "--model", vks::test::model_path("stories260K.gguf"), "--messages", messages});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("has no tokenizer.chat_template"), std::string::npos) << result.err;

  result = run_process({vkstream(), "template", "--messages", messages});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(result.out.empty());
}

}  // namespace
