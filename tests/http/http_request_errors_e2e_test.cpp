// Issue 37, against the real vkstreamd: errors name what the client sent. Constraint schemas that
// cannot be followed are 400s naming response_format / format / json_schema (not `grammar`, a field
// nobody sent) on every surface, refused when compiled (a pattern of 50,000 alternatives failed at
// generation time as a 500); `logprobs: true` on /v1/completions is a 400; a value just out of
// range is printed as sent.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>

#include "tests/http/http_daemon_suite.h"

namespace vks::test {
namespace {

using nlohmann::json;

std::string many_alternatives(int n) {  // ^(aaa|baa|...)$: n distinct alternatives
  const std::string letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string out = "^(";
  for (int i = 0; i < n; ++i) {
    if (i > 0) out += '|';
    out += letters[i % 62];
    out += letters[(i / 62) % 62];
    out += letters[(i / 3844) % 62];
  }
  return out + ")$";
}

// The schemas of the attack: loops through $ref, a pattern repeating an empty match, and one
// with more alternatives than the matcher follows.
std::vector<json> bad_schemas() {
  return {json::parse(R"({"$ref":"#"})"),
          json::parse(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"),
          json::parse(R"({"type":"string","pattern":"^((a*)*)*$"})"),
          json{{"type", "string"}, {"pattern", many_alternatives(50000)}}};
}

const json kMessages = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});

class HttpRequestErrorsE2eTest : public HttpDaemonSuite {
 protected:
  // The msgpack chat with `json_schema`: its error answer, if it got one.
  static std::optional<proto::ErrorAnswer> wire_chat_error(const json& schema) {
    UdsClient u;
    if (!u.connect(daemon_->socket_path())) return std::nullopt;
    const json request = {{"type", "chat"}, {"tag", 1}, {"messages", kMessages}, {"max_tokens", 8},
                          {"json_schema", schema.dump()}};
    const std::vector<uint8_t> packed = json::to_msgpack(request);
    if (!u.send(std::string(packed.begin(), packed.end()))) return std::nullopt;
    std::optional<proto::ServerMessage> answer = u.recv(30000);
    if (!answer) return std::nullopt;
    const auto* e = std::get_if<proto::ErrorAnswer>(&answer->body);
    return e != nullptr ? std::optional<proto::ErrorAnswer>(*e) : std::nullopt;
  }
};

TEST_F(HttpRequestErrorsE2eTest, SchemasThatCannotBeFollowedAre400sNamingTheFieldSent) {
  for (const json& schema : bad_schemas()) {
    const std::string shown = schema.dump().substr(0, 60);
    const json openai = {{"messages", kMessages},
                         {"max_tokens", 8},
                         {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}}}};
    const auto r = call("/v1/chat/completions", openai);
    ASSERT_TRUE(r) << shown;
    EXPECT_EQ(r->status, 400) << shown << ": " << r->body.substr(0, 300);
    const json e = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(e.contains("error")) << r->body.substr(0, 300);
    EXPECT_EQ(e["error"]["param"], "response_format") << r->body.substr(0, 300);
    EXPECT_EQ(e["error"]["code"], "invalid_field") << r->body.substr(0, 300);
    EXPECT_EQ(e["error"]["message"].get<std::string>().find("grammar:"), std::string::npos) << r->body.substr(0, 300);

    const auto o = call("/api/chat", {{"model", "stories260K"}, {"messages", kMessages}, {"stream", false}, {"format", schema}});
    ASSERT_TRUE(o) << shown;
    EXPECT_EQ(o->status, 400) << shown << ": " << o->body.substr(0, 300);
    const json oe = json::parse(o->body, nullptr, false);
    ASSERT_TRUE(oe.contains("error")) << o->body.substr(0, 300);
    const std::string message = oe["error"].get<std::string>();
    EXPECT_EQ(message.rfind("format: ", 0), 0u) << message.substr(0, 300);  // Ollama's field, not the wire's

    const std::optional<proto::ErrorAnswer> w = wire_chat_error(schema);
    ASSERT_TRUE(w) << shown << ": not refused on the Unix socket";
    EXPECT_EQ(w->error.code, proto::WireError::kInvalidField) << w->error.message.substr(0, 300);
    EXPECT_EQ(w->error.field, "json_schema") << w->error.message.substr(0, 300);
  }
  // And the daemon still serves a schema it can follow.
  const auto ok = call("/v1/chat/completions",
                       {{"messages", kMessages}, {"max_tokens", 8},
                        {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "object"}}}}}}}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST_F(HttpRequestErrorsE2eTest, CompletionsLogprobsIsAnInteger) {
  const auto r = call("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 2}, {"logprobs", true}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "logprobs") << r->body;
  const auto ok = call("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 2}, {"logprobs", 2}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST_F(HttpRequestErrorsE2eTest, AValueJustOutOfRangeIsPrintedAsSent) {
  const auto r = call("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 2}, {"repetition_penalty", 100.0001}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const std::string message = json::parse(r->body)["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("got 100.0001"), std::string::npos) << message;
}

}  // namespace
}  // namespace vks::test
