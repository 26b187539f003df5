// The `chat` wire request: encode/parse round trip and field-level errors.
#include <gtest/gtest.h>

#include <functional>

#include <msgpack.hpp>

#include "protocol/requests.h"

namespace {

using namespace vks::proto;

ChatRequest sample() {
  ChatRequest c;
  c.messages = {{"system", "Be brief."}, {"user", "Hi \xF0\x9F\x98\x80"}};
  c.add_generation_prompt = false;
  c.chat_template = "{{ messages[0].content }}";
  c.generate.max_tokens = 7;
  c.generate.temperature = 0.5;
  c.generate.stop = {"\n\n"};
  c.generate.id = "chat-1";
  c.generate.detached = true;
  return c;
}

Result<Request> parse(const std::string& payload) { return parse_request(payload, ProtocolLimits{}); }

TEST(ChatRequest, RoundTrips) {
  Result<Request> parsed = parse(encode_request(RequestBody(sample()), Tag::of(5)));
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_TRUE(std::holds_alternative<ChatRequest>(parsed->body));
  EXPECT_EQ(request_type_name(parsed->body), "chat");
  const ChatRequest& c = std::get<ChatRequest>(parsed->body);
  ASSERT_EQ(c.messages.size(), 2u);
  EXPECT_EQ(c.messages[1].role, "user");
  EXPECT_EQ(c.messages[1].content, "Hi \xF0\x9F\x98\x80");
  EXPECT_FALSE(c.add_generation_prompt);
  EXPECT_EQ(c.chat_template, "{{ messages[0].content }}");
  EXPECT_EQ(c.generate.max_tokens, 7);
  EXPECT_EQ(c.generate.temperature, 0.5);
  EXPECT_EQ(c.generate.stop, std::vector<std::string>{"\n\n"});
  EXPECT_EQ(c.generate.id, "chat-1");
  EXPECT_TRUE(c.generate.is_detached());
  EXPECT_TRUE(c.generate.prompt.empty());
  EXPECT_TRUE(c.generate.prompt_ids.empty());
}

TEST(ChatRequest, DefaultsAddTheGenerationPrompt) {
  ChatRequest c;
  c.messages = {{"user", "x"}};
  Result<Request> parsed = parse(encode_request(RequestBody(c)));
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(std::get<ChatRequest>(parsed->body).add_generation_prompt);
  EXPECT_FALSE(std::get<ChatRequest>(parsed->body).chat_template.has_value());
}

// Field name of the error a chat request with `edit` applied gets ("" when it parses).
std::string error_field(const std::function<void(ChatRequest&)>& edit, WireError expected = WireError::kInvalidField) {
  ChatRequest c = sample();
  edit(c);
  Result<Request> parsed = parse(encode_request(RequestBody(c)));
  if (parsed) return "";
  EXPECT_EQ(parsed.error().code, expected) << parsed.error().message;
  return parsed.error().field;
}

TEST(ChatRequest, BadFieldsAreNamed) {
  EXPECT_EQ(error_field([](ChatRequest& c) { c.messages.clear(); }), "messages");
  EXPECT_EQ(error_field([](ChatRequest& c) { c.messages[1].role.clear(); }), "messages.1.role");
  EXPECT_EQ(error_field([](ChatRequest& c) { c.messages.assign(kMaxChatMessages + 1, {"user", "x"}); }), "messages");
  EXPECT_EQ(error_field([](ChatRequest& c) { c.chat_template = std::string(kMaxChatTemplateBytes + 1, 'x'); }),
            "chat_template");
  EXPECT_EQ(error_field([](ChatRequest& c) { c.generate.temperature = -1; }), "temperature");
}

// A hand-built chat map: {"type": "chat", <extra>}.
std::string chat_map(const std::function<void(msgpack::packer<msgpack::sbuffer>&)>& extra, uint32_t extra_entries) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(1 + extra_entries);
  pk.pack(std::string("type"));
  pk.pack(std::string("chat"));
  extra(pk);
  return std::string(buf.data(), buf.size());
}

// Constrained output applies to chat as to generate (issue 12: grammar / json_schema on chat; the
// HTTP chat endpoints' response_format and Ollama format travel in these fields).
TEST(ChatRequest, GrammarAndJsonSchemaRoundTrip) {
  ChatRequest c = sample();
  c.generate.json_schema = R"({"type":"object","properties":{"n":{"type":"integer"}}})";
  Result<Request> parsed = parse(encode_request(RequestBody(c)));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(std::get<ChatRequest>(parsed->body).generate.json_schema, c.generate.json_schema);

  c.generate.json_schema.clear();
  c.generate.grammar = "root ::= \"yes\" | \"no\"";
  parsed = parse(encode_request(RequestBody(c)));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(std::get<ChatRequest>(parsed->body).generate.grammar, c.generate.grammar);
  EXPECT_TRUE(std::get<ChatRequest>(parsed->body).generate.json_schema.empty());

  // A schema given as a map (not its text) is kept as JSON text too.
  Result<Request> as_map = parse(chat_map([](auto& pk) {
    pk.pack(std::string("messages"));
    pk.pack_array(1);
    pk.pack_map(2);
    pk.pack(std::string("role"));
    pk.pack(std::string("user"));
    pk.pack(std::string("content"));
    pk.pack(std::string("hi"));
    pk.pack(std::string("json_schema"));
    pk.pack_map(1);
    pk.pack(std::string("type"));
    pk.pack(std::string("object"));
  }, 2));
  ASSERT_TRUE(as_map) << as_map.error().message;
  EXPECT_EQ(std::get<ChatRequest>(as_map->body).generate.json_schema, R"({"type":"object"})");

  Result<Request> bad = parse(chat_map([](auto& pk) {
    pk.pack(std::string("messages"));
    pk.pack_array(1);
    pk.pack_map(2);
    pk.pack(std::string("role"));
    pk.pack(std::string("user"));
    pk.pack(std::string("content"));
    pk.pack(std::string("hi"));
    pk.pack(std::string("json_schema"));
    pk.pack(7);
  }, 2));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "json_schema");
}

TEST(ChatRequest, MissingOrMalformedMessages) {
  Result<Request> r = parse(chat_map([](auto&) {}, 0));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, WireError::kMissingField);
  EXPECT_EQ(r.error().field, "messages");

  r = parse(chat_map([](auto& pk) {
    pk.pack(std::string("messages"));
    pk.pack_array(1);
    pk.pack(std::string("not a map"));
  }, 1));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "messages.0");

  r = parse(chat_map([](auto& pk) {
    pk.pack(std::string("messages"));
    pk.pack_array(1);
    pk.pack_map(1);
    pk.pack(std::string("role"));
    pk.pack(std::string("user"));
  }, 1));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, WireError::kMissingField);
  EXPECT_EQ(r.error().field, "messages.0.content");

  r = parse(chat_map([](auto& pk) {
    pk.pack(std::string("messages"));
    pk.pack_array(1);
    pk.pack_map(2);
    pk.pack(std::string("role"));
    pk.pack(std::string("user"));
    pk.pack(std::string("content"));
    pk.pack(std::string("hi"));
    pk.pack(std::string("prompt"));
    pk.pack(std::string("also a prompt"));
  }, 2));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "prompt");
}

}  // namespace

namespace {

// Tool fields: tools and an assistant turn's calls as JSON text (key order kept), a tool turn's
// id and name, tool_choice with its function, parallel_tool_calls; and their errors.
ChatRequest with_tools() {
  ChatRequest c;
  c.messages = {{"user", "Weather?", "", "", ""},
                {"assistant", "", R"([{"id":"c1","type":"function","function":{"name":"f","arguments":{"z":1,"a":2}}}])", "", ""},
                {"tool", "sunny", "", "c1", "f"}};
  c.tools = R"([{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])";
  c.tool_choice = "function";
  c.tool_name = "f";
  c.parallel_tool_calls = false;
  return c;
}

TEST(ChatRequest, ToolFieldsRoundTrip) {
  Result<Request> parsed = parse(encode_request(RequestBody(with_tools()), Tag::of(1)));
  ASSERT_TRUE(parsed) << parsed.error().message;
  const ChatRequest& c = std::get<ChatRequest>(parsed->body);
  EXPECT_EQ(c.tools, with_tools().tools);
  EXPECT_EQ(c.tool_choice, "function");
  EXPECT_EQ(c.tool_name, "f");
  EXPECT_EQ(c.parallel_tool_calls, false);
  ASSERT_EQ(c.messages.size(), 3u);
  EXPECT_EQ(c.messages[1].tool_calls, with_tools().messages[1].tool_calls);
  EXPECT_EQ(c.messages[2].tool_call_id, "c1");
  EXPECT_EQ(c.messages[2].name, "f");
  EXPECT_TRUE(c.has_tools());
}

TEST(ChatRequest, ToolFieldErrorsAreNamed) {
  auto field = [](const std::function<void(ChatRequest&)>& edit) {
    ChatRequest c = with_tools();
    edit(c);
    Result<Request> parsed = parse(encode_request(RequestBody(c)));
    return parsed ? std::string("accepted") : parsed.error().field;
  };
  EXPECT_EQ(field([](ChatRequest& c) { c.tool_choice = "sometimes"; }), "tool_choice");
  EXPECT_EQ(field([](ChatRequest& c) { c.tool_name.clear(); }), "tool_name");
  EXPECT_EQ(field([](ChatRequest& c) { c.tool_choice = "auto"; }), "tool_choice");  // a name without "function"
  EXPECT_EQ(field([](ChatRequest& c) {
              c.tools.clear();
              c.tool_choice = "required";
              c.tool_name.clear();
            }),
            "tool_choice");
  EXPECT_EQ(field([](ChatRequest& c) {
              c.tool_choice = "none";
              c.tool_name.clear();
            }),
            "accepted");
}

}  // namespace
