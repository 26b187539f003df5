// Tool calls, derived from chat templates: the format each template's probe renderings reveal
// (the reference templates, the ones inside the Qwen2.5 and Llama 3 vocabulary GGUFs, and
// Llama 3.1 / Mistral style templates written here), the incremental parser (any split of an
// answer parses as the whole answer), and the prompt a template without tool syntax gets.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include <fstream>
#include <random>
#include <sstream>

#include "engine/chat/model_chat_template.h"
#include "engine/chat/tool_call_parser.h"
#include "engine/chat/tool_format.h"
#include "engine/chat/tool_prompt.h"
#include "engine/gguf/gguf_file.h"
#include "tests/common/llama31_tool_template.h"
#include "tests/common/test_models.h"

namespace vks::chat {
namespace {

using ojson = nlohmann::ordered_json;

std::string reference_template(const std::string& name) {
  std::ifstream in(test::model_path("reference/chat-templates.json"));
  if (!in) return {};
  std::stringstream buffer;
  buffer << in.rdbuf();
  for (const auto& c : ojson::parse(buffer.str())) {
    if (c["template_name"] == name) return c["template"].get<std::string>();
  }
  return {};
}

ToolCallFormat format_of(const std::string& source) {
  return detect_tool_format(ChatTemplate::parse(source, "<s>", "</s>"));
}

// Mistral's: [TOOL_CALLS] and one JSON array of calls.
const char* kMistralLike =
    "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}[INST] {{ m.content }} [/INST]"
    "{% elif m.tool_calls %}[TOOL_CALLS][{% for t in m.tool_calls %}{{ {'name': t.function.name, 'arguments': t.function.arguments} | tojson }}"
    "{% if not loop.last %}, {% endif %}{% endfor %}]{{ eos_token }}{% else %}{{ m.content }}{{ eos_token }}{% endif %}{% endfor %}";

TEST(ToolFormat, QwenTemplatesUseToolCallTags) {
  for (const char* name : {"qwen2.5", "qwen3"}) {
    SCOPED_TRACE(name);
    const std::string source = reference_template(name);
    ASSERT_FALSE(source.empty()) << "reference/chat-templates.json missing";
    const ToolCallFormat f = format_of(source);
    EXPECT_TRUE(f.native);
    EXPECT_EQ(f.open, "<tool_call>");
    EXPECT_EQ(f.close, "</tool_call>");
    EXPECT_EQ(f.name_key, "name");
    EXPECT_EQ(f.args_key, "arguments");
    EXPECT_TRUE(f.name_first);
    EXPECT_FALSE(f.array);
    EXPECT_TRUE(f.parallel);
  }
}

TEST(ToolFormat, TemplatesWithoutToolSyntaxGetTheGenericForm) {
  for (const char* name : {"llama3", "llama2", "chatml"}) {
    SCOPED_TRACE(name);
    const std::string source = reference_template(name);
    ASSERT_FALSE(source.empty());
    EXPECT_EQ(format_of(source), generic_tool_format());
  }
  EXPECT_FALSE(generic_tool_format().native);
}

TEST(ToolFormat, Llama31StyleJsonAtTheStart) {
  const ToolCallFormat f = format_of(test::kLlama31LikeTemplate);
  EXPECT_TRUE(f.native);
  EXPECT_EQ(f.open, "");
  EXPECT_EQ(f.close, "");
  EXPECT_EQ(f.args_key, "parameters");
  EXPECT_FALSE(f.parallel);  // the template refuses two calls
}

TEST(ToolFormat, MistralStyleArray) {
  const ToolCallFormat f = format_of(kMistralLike);
  EXPECT_TRUE(f.native);
  EXPECT_EQ(f.open, "[TOOL_CALLS]");
  EXPECT_TRUE(f.array);
  EXPECT_TRUE(f.parallel);
  EXPECT_EQ(f.args_key, "arguments");
}

TEST(ToolFormat, TemplatesInsideTheVocabularyFiles) {
  const auto qwen = load_model_chat_template(gguf::GgufFile::open(test::model_path("qwen2-vocab.gguf")));
  EXPECT_EQ(qwen.origin, "model");
  EXPECT_TRUE(qwen.tool_format.native);
  EXPECT_EQ(qwen.tool_format.open, "<tool_call>");
  EXPECT_EQ(qwen.tool_format.close, "</tool_call>");
  const auto llama = load_model_chat_template(gguf::GgufFile::open(test::model_path("llama3-vocab.gguf")));
  EXPECT_EQ(llama.tool_format, generic_tool_format());  // Llama 3.0's template has no tools
}

// ---- the parser ----

ToolParse whole(const ToolCallFormat& f, const std::string& text) {
  ToolCallParser p(f);
  ToolParse out;
  p.feed(text, out);
  p.finish(out);
  return out;
}

ToolParse in_pieces(const ToolCallFormat& f, const std::string& text, const std::vector<size_t>& cuts) {
  ToolCallParser p(f);
  ToolParse all;
  size_t at = 0;
  for (size_t cut : cuts) {
    ToolParse piece;
    p.feed(std::string_view(text).substr(at, cut - at), piece);
    all.text += piece.text;
    for (auto& c : piece.calls) all.calls.push_back(c);
    at = cut;
  }
  ToolParse rest;
  p.feed(std::string_view(text).substr(at), rest);
  p.finish(rest);
  all.text += rest.text;
  for (auto& c : rest.calls) all.calls.push_back(c);
  return all;
}

ToolParse byte_by_byte(const ToolCallFormat& f, const std::string& text) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < text.size(); ++i) cuts.push_back(i);
  return in_pieces(f, text, cuts);
}

void expect_split_invariant(const ToolCallFormat& f, const std::string& text, std::mt19937& rng) {
  const ToolParse expected = whole(f, text);
  EXPECT_EQ(byte_by_byte(f, text), expected) << text;
  for (int round = 0; round < 8 && !text.empty(); ++round) {
    std::vector<size_t> cuts;
    std::uniform_int_distribution<size_t> pos(0, text.size());
    for (int k = 0; k < 3; ++k) cuts.push_back(pos(rng));
    std::sort(cuts.begin(), cuts.end());
    EXPECT_EQ(in_pieces(f, text, cuts), expected) << text;
  }
}

TEST(ToolCallParser, QwenTextThenTwoCalls) {
  const ToolCallFormat f = generic_tool_format();
  const std::string answer =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"}{\\\"\"}}\n</tool_call>\n";
  const ToolParse p = whole(f, answer);
  EXPECT_EQ(p.text, "Let me check.\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","unit":"c"})");  // the model's key order
  EXPECT_EQ(p.calls[1].name, "get_time");
  EXPECT_EQ(p.calls[1].arguments, R"({"tz":"}{\""})");
  std::mt19937 rng(1);
  expect_split_invariant(f, answer, rng);
}

TEST(ToolCallParser, WhatIsNotACallStaysText) {
  const ToolCallFormat f = generic_tool_format();
  EXPECT_EQ(whole(f, "a <tool_call> b").text, "a <tool_call> b");
  EXPECT_EQ(whole(f, "<tool_call>{\"nam\": 1}</tool_call>").text, "<tool_call>{\"nam\": 1}</tool_call>");
  EXPECT_TRUE(whole(f, "<tool_call>{\"nam\": 1}</tool_call>").calls.empty());
  EXPECT_EQ(whole(f, "x <tool_ca").text, "x <tool_ca");              // a partial marker at the end
  EXPECT_EQ(whole(f, "<tool_call>{\"name\": \"f\", \"argu").text,     // cut by max_tokens
            "<tool_call>{\"name\": \"f\", \"argu");
  EXPECT_EQ(whole(f, "<tool_call>{\"name\": \"f\", \"arguments\": 3}").calls.size(), 0u);
  const ToolParse args_as_text = whole(f, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>");
  ASSERT_EQ(args_as_text.calls.size(), 1u);
  EXPECT_EQ(args_as_text.calls[0].arguments, R"({"a":1})");
  const ToolParse no_close = whole(f, "<tool_call>{\"name\": \"f\"} and more");
  ASSERT_EQ(no_close.calls.size(), 1u);
  EXPECT_EQ(no_close.calls[0].arguments, "{}");
  EXPECT_EQ(no_close.text, "and more");
}

TEST(ToolCallParser, Llama31JsonAtTheStartOnly) {
  const ToolCallFormat f = format_of(test::kLlama31LikeTemplate);
  const ToolParse call = whole(f, "  {\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}");
  ASSERT_EQ(call.calls.size(), 1u);
  EXPECT_EQ(call.calls[0].arguments, R"({"q":"x"})");
  EXPECT_EQ(call.text, "");
  EXPECT_EQ(whole(f, "Hi {\"name\": \"search\", \"parameters\": {}}").calls.size(), 0u);
  EXPECT_EQ(whole(f, "{\"answer\": 42}").text, "{\"answer\": 42}");
  std::mt19937 rng(2);
  expect_split_invariant(f, "  {\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}", rng);
}

TEST(ToolCallParser, MistralArray) {
  const ToolCallFormat f = format_of(kMistralLike);
  const std::string answer = "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"k\": [1, 2]}}]";
  const ToolParse p = whole(f, answer);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].name, "b");
  EXPECT_EQ(p.calls[1].arguments, R"({"k":[1,2]})");
  EXPECT_EQ(p.text, "");
  std::mt19937 rng(3);
  expect_split_invariant(f, answer, rng);
}

// Streamed arguments: fed one byte at a time, a call's fragments (the first naming it) join to
// exactly the arguments of its finished call, which are the model's text without the whitespace
// between tokens (numbers and escapes as written), with or without streaming.
TEST(ToolCallParser, ArgumentFragmentsJoinToTheFinishedCall) {
  const std::string answer =
      "Hi <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rio de Janeiro\", \"days\": 1.50, "
      "\"tags\": [ \"a b\", \"\\u00e9\\\"}\" ]}}\n</tool_call>\n<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
  const std::string expected_args = R"({"city":"Rio de Janeiro","days":1.50,"tags":["a b","\u00e9\"}"]})";
  ToolCallParser p(generic_tool_format());
  p.stream_arguments(true);
  std::map<size_t, std::string> joined;
  std::map<size_t, std::string> names;
  std::map<size_t, int> count;
  std::vector<ToolCall> calls;
  std::string text;
  for (size_t i = 0; i <= answer.size(); ++i) {
    ToolParse out;
    if (i < answer.size()) {
      p.feed(answer.substr(i, 1), out);
    } else {
      p.finish(out);
    }
    text += out.text;
    for (const ToolCallFragment& f : out.fragments) {
      EXPECT_EQ(f.name.empty(), count[f.index] > 0) << "only the first fragment names the call";
      if (!f.name.empty()) names[f.index] = f.name;
      joined[f.index] += f.arguments;
      ++count[f.index];
    }
    for (const ToolCall& c : out.calls) calls.push_back(c);
  }
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(text, "Hi ");
  EXPECT_EQ(calls[0].arguments, expected_args);
  EXPECT_EQ(joined[0], expected_args);
  EXPECT_EQ(names[0], "get_weather");
  EXPECT_GT(count[0], 10);  // byte by byte: many fragments
  EXPECT_TRUE(calls[0].streamed);
  EXPECT_EQ(joined[1], "{}");
  EXPECT_EQ(names[1], "f");
  // Without streaming: the same calls (not marked streamed), no fragments.
  const ToolParse plain = whole(generic_tool_format(), answer);
  ASSERT_EQ(plain.calls.size(), 2u);
  EXPECT_EQ(plain.calls[0].arguments, expected_args);
  EXPECT_FALSE(plain.calls[0].streamed);
  EXPECT_TRUE(plain.fragments.empty());
  // A name after the arguments: no fragments, the call whole.
  ToolCallParser late(generic_tool_format());
  late.stream_arguments(true);
  ToolParse out;
  late.feed("<tool_call>{\"arguments\": {\"a\": 1}, \"name\": \"f\"}</tool_call>", out);
  late.finish(out);
  EXPECT_TRUE(out.fragments.empty());
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_FALSE(out.calls[0].streamed);
  EXPECT_EQ(out.calls[0].arguments, R"({"a":1})");
}

// Random answers built from the pieces of calls: every split parses as the whole.
TEST(ToolCallParser, AnySplitParsesAsTheWhole) {
  const std::vector<ToolCallFormat> formats = {generic_tool_format(), format_of(test::kLlama31LikeTemplate), format_of(kMistralLike)};
  const std::vector<std::string> pieces = {"<tool_call>", "</tool_call>", "[TOOL_CALLS]", "{\"name\": \"f\", ", "\"arguments\": ",
                                           "\"parameters\": ", "{\"a\": \"}\"}", "}", "{", "[", "]", ", ", "\n", " ", "text",
                                           "\"", "\\", "<", "<tool", "</", "{\"name\": \"g\", \"arguments\": {}}"};
  std::mt19937 rng(4);
  std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1);
  std::uniform_int_distribution<int> count(0, 14);
  for (int i = 0; i < 400; ++i) {
    std::string answer;
    for (int k = count(rng); k > 0; --k) answer += pieces[pick(rng)];
    for (const ToolCallFormat& f : formats) expect_split_invariant(f, answer, rng);
  }
}

// ---- the prompt of a template without tool syntax ----

TEST(ToolPrompt, GenericTemplatesGetToolsAndCallsAsText) {
  const ojson tools = ojson::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])");
  const ojson messages = ojson::parse(R"([
    {"role":"user","content":"Weather?"},
    {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
    {"role":"tool","tool_call_id":"c1","content":"sunny"}])");
  const ojson out = prepare_tool_messages(messages, tools, true, generic_tool_format());
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0]["role"], "system");
  EXPECT_NE(out[0]["content"].get<std::string>().find("get_weather"), std::string::npos);
  EXPECT_EQ(out[2]["content"], "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n</tool_call>");
  EXPECT_EQ(out[3]["role"], "user");
  EXPECT_EQ(out[3]["content"], "<tool_response>\nsunny\n</tool_response>");

  // A native template keeps the turns, with the arguments as an object for its tojson.
  ToolCallFormat native = generic_tool_format();
  native.native = true;
  const ojson kept = prepare_tool_messages(messages, tools, true, native);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_TRUE(kept[1]["tool_calls"][0]["function"]["arguments"].is_object());
  EXPECT_THROW(prepare_tool_messages(ojson::parse(R"([{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"{oops"}}]}])"),
                                     tools, true, native),
               vks::Error);
}

TEST(ToolPrompt, QwenTemplateRendersToolsAndHistory) {
  const std::string source = reference_template("qwen2.5");
  ASSERT_FALSE(source.empty());
  const ChatTemplate t = ChatTemplate::parse(source, std::nullopt, "<|im_end|>");
  const ojson tools = ojson::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])");
  const ojson messages = prepare_tool_messages(ojson::parse(R"([
    {"role":"user","content":"Weather?"},
    {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
    {"role":"tool","tool_call_id":"c1","content":"sunny"}])"), tools, true, detect_tool_format(t));
  const std::string text = t.render_json(messages, true, {{"tools", tools}});
  EXPECT_NE(text.find("<tools>\n{\"type\": \"function\""), std::string::npos) << text;
  EXPECT_NE(text.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"), std::string::npos) << text;
  EXPECT_NE(text.find("<tool_response>\nsunny\n</tool_response>"), std::string::npos) << text;
}

}  // namespace
}  // namespace vks::chat
