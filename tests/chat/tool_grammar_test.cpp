// The grammar of a forced tool call: only calls to the allowed tools, with arguments that
// validate against each tool's schema (declared order, $refs of its own), in the template's
// format; and what the grammar accepts parses back as those calls.
#include <gtest/gtest.h>

#include "engine/chat/tool_call_parser.h"
#include "engine/chat/tool_grammar.h"
#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_matcher.h"

namespace vks::chat {
namespace {

using ojson = nlohmann::ordered_json;

const ojson kTools = ojson::parse(R"([
  {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
    "properties":{"city":{"enum":["Paris","Rome"]},"days":{"type":"integer","minimum":1,"maximum":9}},
    "required":["city","days"],"additionalProperties":false}}},
  {"type":"function","function":{"name":"add_item","parameters":{"type":"object",
    "properties":{"item":{"$ref":"#/$defs/item"}},"required":["item"],"additionalProperties":false,
    "$defs":{"item":{"type":"object","properties":{"name":{"type":"string","maxLength":8}},"required":["name"],"additionalProperties":false}}}}}])");

grammar::Grammar compiled(const ToolCallFormat& f, const std::vector<ToolSpec>& tools, bool parallel) {
  return grammar::parse_gbnf(tool_call_gbnf(f, tools, parallel));
}

TEST(ToolGrammar, OnlyValidCallsInTheTemplatesFormat) {
  const std::vector<ToolSpec> tools = parse_tools(kTools);
  ASSERT_EQ(tools.size(), 2u);
  const grammar::Grammar g = compiled(generic_tool_format(), tools, /*parallel=*/false);
  auto ok = [&](const std::string& s) { return grammar::matches_completely(g, s); };
  EXPECT_TRUE(ok("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 3}}\n</tool_call>"));
  EXPECT_TRUE(ok("<tool_call>{\"name\":\"add_item\",\"arguments\":{\"item\":{\"name\":\"milk\"}}}</tool_call>"));
  EXPECT_FALSE(ok("<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\",\"days\":3}}</tool_call>"));   // enum
  EXPECT_FALSE(ok("<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"days\":3,\"city\":\"Rome\"}}</tool_call>"));   // order
  EXPECT_FALSE(ok("<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Rome\"}}</tool_call>"));              // required
  EXPECT_FALSE(ok("<tool_call>{\"name\":\"delete_all\",\"arguments\":{}}</tool_call>"));                              // no such tool
  EXPECT_FALSE(ok("<tool_call>{\"name\":\"add_item\",\"arguments\":{\"item\":{\"name\":\"waytoolongname\"}}}</tool_call>"));
  EXPECT_FALSE(ok("Sure! <tool_call>{\"name\":\"add_item\",\"arguments\":{\"item\":{\"name\":\"a\"}}}</tool_call>"));   // no text first
  const std::string two = "<tool_call>{\"name\":\"add_item\",\"arguments\":{\"item\":{\"name\":\"a\"}}}</tool_call>\n"
                          "<tool_call>{\"name\":\"add_item\",\"arguments\":{\"item\":{\"name\":\"b\"}}}</tool_call>";
  EXPECT_FALSE(ok(two));
  EXPECT_TRUE(grammar::matches_completely(compiled(generic_tool_format(), tools, /*parallel=*/true), two));

  // What the grammar accepts is what the parser reads as calls.
  ToolCallParser parser(generic_tool_format());
  ToolParse parsed;
  parser.feed(two, parsed);
  parser.finish(parsed);
  ASSERT_EQ(parsed.calls.size(), 2u);
  EXPECT_EQ(parsed.calls[1].arguments, R"({"item":{"name":"b"}})");
  EXPECT_EQ(parsed.text, "");
}

// Inside a call at most one space where JSON allows whitespace: indentation is refused, so a weak
// model cannot spend its token budget on layout before the call closes.
TEST(ToolGrammar, AtMostOneSpaceInsideACall) {
  const grammar::Grammar g = compiled(generic_tool_format(), parse_tools(kTools), /*parallel=*/false);
  auto ok = [&](const std::string& s) { return grammar::matches_completely(g, s); };
  EXPECT_TRUE(ok("<tool_call>{ \"name\" : \"get_weather\" , \"arguments\" : { \"city\" : \"Rome\" , \"days\" : 3 } }</tool_call>"));
  EXPECT_FALSE(ok("<tool_call>{\"name\":\"get_weather\",\n  \"arguments\":{\"city\":\"Rome\",\"days\":3}}</tool_call>"));
  EXPECT_FALSE(ok("<tool_call>{\"name\":  \"get_weather\",\"arguments\":{\"city\":\"Rome\",\"days\":3}}</tool_call>"));
  EXPECT_FALSE(ok("<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Rome\",\"days\":3}\n}</tool_call>"));
}

TEST(ToolGrammar, NamedFunctionAndOtherFormats) {
  const std::vector<ToolSpec> all = parse_tools(kTools);
  const std::vector<ToolSpec> only{all[0]};
  ToolCallFormat llama;
  llama.native = true;
  llama.args_key = "parameters";
  llama.parallel = false;
  const grammar::Grammar g = compiled(llama, only, true);
  EXPECT_TRUE(grammar::matches_completely(g, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 9}}"));
  EXPECT_FALSE(grammar::matches_completely(g, "{\"name\": \"add_item\", \"parameters\": {\"item\": {\"name\": \"a\"}}}"));
  ToolCallFormat mistral = llama;
  mistral.open = "[TOOL_CALLS]";
  mistral.array = true;
  mistral.parallel = true;
  mistral.args_key = "arguments";
  const grammar::Grammar m = compiled(mistral, all, true);
  EXPECT_TRUE(grammar::matches_completely(
      m, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 1}}, {\"name\": \"add_item\", \"arguments\": {\"item\": {\"name\": \"x\"}}}]"));
}

// tool_choice "auto": free text until the call marker (or, without one, JSON at the start of the
// answer), then only valid calls; what the grammar accepts, the parser reads as the same calls.
TEST(ToolGrammar, LazyUnderAutoFreeTextThenOnlyValidCalls) {
  const std::vector<ToolSpec> tools = parse_tools(kTools);
  const grammar::Grammar g = grammar::parse_gbnf(tool_call_lazy_gbnf(generic_tool_format(), tools, /*parallel=*/true));
  auto ok = [&](const std::string& s) { return grammar::matches_completely(g, s); };
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 3}}\n</tool_call>";
  EXPECT_TRUE(ok(""));
  EXPECT_TRUE(ok("It is sunny in Rome. <tool_ca <b>{\"name\": 1}</b>"));  // text, near-markers included
  EXPECT_TRUE(ok(call));
  EXPECT_TRUE(ok("Let me check.\n" + call + "\n" + call));
  EXPECT_FALSE(ok("Let me check.\n" + call + " Done."));  // after a call: calls or the end
  EXPECT_FALSE(ok("<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 3}}</tool_call>"));
  EXPECT_FALSE(ok("Sure <tool_call>{\"name\": \"delete_all\", \"arguments\": {}}</tool_call>"));
  EXPECT_FALSE(ok("Sure <tool_call>I will call a tool"));
  const grammar::Grammar one = grammar::parse_gbnf(tool_call_lazy_gbnf(generic_tool_format(), tools, /*parallel=*/false));
  EXPECT_TRUE(grammar::matches_completely(one, "Hi " + call));
  EXPECT_FALSE(grammar::matches_completely(one, "Hi " + call + "\n" + call));

  ToolCallParser parser(generic_tool_format());
  ToolParse parsed;
  parser.feed("Let me check.\n" + call, parsed);
  parser.finish(parsed);
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].arguments, R"({"city":"Rome","days":3})");
  EXPECT_EQ(parsed.text, "Let me check.\n");

  // Llama 3.1: no marker; a call is JSON at the start of the answer.
  ToolCallFormat llama;
  llama.native = true;
  llama.args_key = "parameters";
  llama.parallel = false;
  const grammar::Grammar l = grammar::parse_gbnf(tool_call_lazy_gbnf(llama, tools, true));
  EXPECT_TRUE(grammar::matches_completely(l, " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 9}}"));
  EXPECT_TRUE(grammar::matches_completely(l, "The weather is {unknown}."));
  EXPECT_FALSE(grammar::matches_completely(l, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"));
  EXPECT_FALSE(grammar::matches_completely(l, "{The weather"));
}

TEST(ToolGrammar, BadToolsAreNamed) {
  auto message = [](const char* tools) {
    try {
      parse_tools(ojson::parse(tools));
    } catch (const vks::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(R"([{"type":"function","function":{}}])").find("tools.0.function.name"), std::string::npos);
  EXPECT_NE(message(R"([{"type":"retrieval"}])").find("tools.0.type"), std::string::npos);
  EXPECT_NE(message(R"([{"function":{"name":"a"}},{"function":{"name":"a"}}])").find("two tools"), std::string::npos);
  EXPECT_NE(message(R"([{"function":{"name":"a","parameters":[]}}])").find("parameters"), std::string::npos);
  // A schema keyword the compiler cannot enforce is refused, not ignored.
  EXPECT_THROW(tool_call_gbnf(generic_tool_format(), parse_tools(ojson::parse(
                   R"([{"function":{"name":"a","parameters":{"type":"object","properties":{"x":{"not":{}}}}}}])")), false),
               vks::Error);
}

}  // namespace
}  // namespace vks::chat
