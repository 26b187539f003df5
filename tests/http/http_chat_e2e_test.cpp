// End to end: POST /v1/chat/completions and POST /api/chat against the real vkstreamd (CPU
// reference, stories260K, whose missing chat template makes the daemon use its ChatML fallback):
// greedy replies equal the msgpack `chat` request's reply for the same messages (streamed and
// not), the answers have each API's shape (chat.completion / chunks with a first role delta and
// [DONE]; Ollama NDJSON with message objects), chat logprobs, response_format / Ollama format
// constrain the reply to JSON valid against the schema, bad conversations get 400 in each API's
// error shape, mutated bodies never get a 5xx, the request is the same request on the Unix socket,
// and a hang-up cancels it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <random>
#include <sstream>
#include <thread>

#include "tests/http/http_daemon_suite.h"

namespace vks::test {
namespace {

using nlohmann::json;

const json kMessages = json::array({{{"role", "system"}, {"content", "You tell short stories about Lily and her dog."}},
                                    {{"role", "user"}, {"content", "Tell me a story about the park."}}});
constexpr int kMaxTokens = 24;

class HttpChatE2eTest : public HttpDaemonSuite {
 protected:
  // The msgpack `chat` request on the Unix socket (encoded from JSON, the wire's own field names):
  // the reply text and prompt length, or a failure.
  struct WireReply {
    std::string text;
    int64_t prompt_tokens = -1;
    std::string reason;
  };
  static std::optional<WireReply> wire_chat(const json& messages, int max_tokens) {
    UdsClient u;
    if (!u.connect(daemon_->socket_path())) return std::nullopt;
    const json request = {{"type", "chat"}, {"tag", 1}, {"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}};
    const std::vector<uint8_t> packed = json::to_msgpack(request);
    if (!u.send(std::string(packed.begin(), packed.end()))) return std::nullopt;
    std::optional<proto::ServerMessage> answer = u.recv(30000);
    if (!answer) return std::nullopt;
    const auto* accepted = std::get_if<proto::AcceptedAnswer>(&answer->body);
    if (accepted == nullptr) return std::nullopt;
    WireReply reply;
    reply.prompt_tokens = accepted->prompt_tokens;
    StreamCollector stream(accepted->id);
    if (!collect(u, stream, 30000)) return std::nullopt;
    reply.text = stream.text();
    if (auto r = stream.reason()) reply.reason = *r == FinishReason::kLength ? "length" : *r == FinishReason::kStop ? "stop" : "other";
    return reply;
  }

  static std::optional<proto::StatusAnswer> status_of(const std::string& id) {
    UdsClient u;
    if (!u.connect(daemon_->socket_path())) return std::nullopt;
    auto m = request(u, simple(proto::StatusRequest{id}, 1));
    if (!m) return std::nullopt;
    if (const auto* s = std::get_if<proto::StatusAnswer>(&m->body)) return *s;
    return std::nullopt;
  }
};

// "data: ..." events of an SSE body, in order; fails the test on anything else or data after [DONE].
std::vector<json> sse_chunks(const std::string& body, bool& saw_done) {
  std::vector<json> chunks;
  saw_done = false;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    EXPECT_EQ(line.rfind("data: ", 0), 0u) << line;
    EXPECT_FALSE(saw_done) << "data after [DONE]";
    if (line == "data: [DONE]") {
      saw_done = true;
      continue;
    }
    chunks.push_back(json::parse(line.substr(6)));
  }
  return chunks;
}

TEST_F(HttpChatE2eTest, OpenAiChatEqualsTheMsgpackChatReply) {
  const auto wire = wire_chat(kMessages, kMaxTokens);
  ASSERT_TRUE(wire) << daemon_->log();
  ASSERT_FALSE(wire->text.empty());

  auto r = call("/v1/chat/completions", {{"model", "stories260K"}, {"messages", kMessages}, {"max_tokens", kMaxTokens}, {"temperature", 0}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  EXPECT_EQ(body["object"], "chat.completion");
  ASSERT_NE(r->header("x-request-id"), nullptr);
  EXPECT_EQ(body["id"], "chatcmpl-" + *r->header("x-request-id"));
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], wire->text);
  EXPECT_EQ(choice["finish_reason"], wire->reason);
  EXPECT_EQ(body["usage"]["prompt_tokens"], wire->prompt_tokens);
  EXPECT_EQ(body["usage"]["completion_tokens"].get<int>() + body["usage"]["prompt_tokens"].get<int>(),
            body["usage"]["total_tokens"].get<int>());
  // The same request on the Unix socket: status works on the HTTP request's id.
  auto s = status_of(*r->header("x-request-id"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, proto::RequestState::kFinished);
  EXPECT_FALSE(s->topic.empty());
}

TEST_F(HttpChatE2eTest, OpenAiChatStreamsChunksWithARoleDeltaFirstAndUsageLast) {
  const auto wire = wire_chat(kMessages, kMaxTokens);
  ASSERT_TRUE(wire);
  auto r = call("/v1/chat/completions", {{"messages", kMessages}, {"max_tokens", kMaxTokens}, {"temperature", 0},
                                         {"stream", true}, {"stream_options", {{"include_usage", true}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(*r->header("content-type"), "text/event-stream");
  bool done = false;
  const std::vector<json> chunks = sse_chunks(r->body, done);
  EXPECT_TRUE(done);
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks.front()["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  std::string finish;
  json usage;
  for (const json& c : chunks) {
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["id"], "chatcmpl-" + *r->header("x-request-id"));
    if (!c["choices"].empty()) {
      const json& delta = c["choices"][0]["delta"];
      if (delta.contains("content")) text += delta["content"].get<std::string>();
      if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
    } else {
      usage = c["usage"];
    }
  }
  EXPECT_EQ(text, wire->text);
  EXPECT_EQ(finish, wire->reason);
  ASSERT_TRUE(usage.is_object()) << r->body;
  EXPECT_EQ(usage["prompt_tokens"], wire->prompt_tokens);
  if (wire->reason == "length") {
    EXPECT_EQ(usage["completion_tokens"], kMaxTokens);
  }
}

TEST_F(HttpChatE2eTest, OllamaChatEqualsTheMsgpackChatReplyStreamedAndNot) {
  const auto wire = wire_chat(kMessages, kMaxTokens);
  ASSERT_TRUE(wire);
  const json request = {{"model", "stories260K"}, {"messages", kMessages}, {"options", {{"num_predict", kMaxTokens}, {"temperature", 0}}}};
  auto r = call("/api/chat", request);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(*r->header("content-type"), "application/x-ndjson");
  std::string text;
  json last;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    last = json::parse(line);
    EXPECT_EQ(last["message"]["role"], "assistant");
    text += last["message"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, wire->text);
  EXPECT_EQ(last["done"], true);
  EXPECT_EQ(last["done_reason"], wire->reason);
  if (wire->reason == "length") {
    EXPECT_EQ(last["eval_count"], kMaxTokens);
  }
  EXPECT_EQ(last["prompt_eval_count"], wire->prompt_tokens);
  EXPECT_GT(last["total_duration"].get<int64_t>(), 0);
  // The whole request covers the engine's prompt evaluation and generation.
  EXPECT_GE(last["total_duration"].get<int64_t>(),
            last["prompt_eval_duration"].get<int64_t>() + last["eval_duration"].get<int64_t>());

  json whole_request = request;
  whole_request["stream"] = false;
  auto whole = call("/api/chat", whole_request);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const json body = json::parse(whole->body);
  EXPECT_EQ(body["message"]["content"], wire->text);
  EXPECT_EQ(body["done"], true);
  EXPECT_FALSE(body.contains("response"));

  // No messages: Ollama's "load the model" request.
  auto load = call("/api/chat", {{"model", "stories260K"}});
  ASSERT_TRUE(load);
  ASSERT_EQ(load->status, 200) << load->body;
  EXPECT_EQ(json::parse(load->body)["done_reason"], "load");
}

TEST_F(HttpChatE2eTest, ContentPartsAndDeveloperRoleRenderLikeTheirPlainForms) {
  const auto plain = wire_chat(kMessages, 8);
  ASSERT_TRUE(plain);
  const json parts = json::array(
      {{{"role", "developer"}, {"content", kMessages[0]["content"]}},
       {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", kMessages[1]["content"]}}})}}});
  auto r = call("/v1/chat/completions", {{"messages", parts}, {"max_tokens", 8}, {"temperature", 0}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  EXPECT_EQ(body["choices"][0]["message"]["content"], plain->text);
  EXPECT_EQ(body["usage"]["prompt_tokens"], plain->prompt_tokens);
}

TEST_F(HttpChatE2eTest, ChatLogprobsHaveTheChatShape) {
  auto r = call("/v1/chat/completions", {{"messages", kMessages}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 3}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  const json& content = body["choices"][0]["logprobs"]["content"];
  ASSERT_TRUE(content.is_array()) << r->body;
  ASSERT_EQ(content.size(), 6u);
  std::string joined;
  for (const json& t : content) {
    const std::string token = t["token"];
    std::string from_bytes;
    for (const json& b : t["bytes"]) from_bytes.push_back(static_cast<char>(b.get<int>()));
    EXPECT_EQ(from_bytes, token);
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    ASSERT_EQ(t["top_logprobs"].size(), 3u);
    // Greedy: the chosen token is the most likely alternative.
    EXPECT_EQ(t["top_logprobs"][0]["token"], token);
    EXPECT_GE(t["top_logprobs"][0]["logprob"].get<double>(), t["top_logprobs"][1]["logprob"].get<double>());
    joined += token;
  }
  EXPECT_EQ(joined, body["choices"][0]["message"]["content"]);

  // Streamed: each content chunk carries its tokens' entries.
  auto s = call("/v1/chat/completions", {{"messages", kMessages}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", true}, {"stream", true}});
  ASSERT_TRUE(s);
  bool done = false;
  size_t entries = 0;
  for (const json& c : sse_chunks(s->body, done)) {
    if (c["choices"].empty() || c["choices"][0]["logprobs"].is_null()) continue;
    for (const json& t : c["choices"][0]["logprobs"]["content"]) {
      EXPECT_TRUE(t["top_logprobs"].empty());
      ++entries;
    }
  }
  EXPECT_EQ(entries, 6u);
}

TEST_F(HttpChatE2eTest, BadConversationsAre400InEachApisErrorShape) {
  struct Case {
    json messages;
    std::string param;
  };
  const std::vector<Case> cases = {
      {json::array(), "messages"},
      {"hi", "messages"},
      {json::array({{{"role", "wizard"}, {"content", "x"}}}), "messages.0.role"},
      {json::array({{{"role", "user"}}}), "messages.0.content"},
      {json::array({{{"role", "user"}, {"content", 5}}}), "messages.0.content"},
      {json::array({{{"role", "user"}, {"content", json::array({{{"type", "image_url"}}})}}}), "messages.0.content.0.type"},
      {json::array({42}), "messages.0"},
  };
  for (const Case& c : cases) {
    auto r = call("/v1/chat/completions", {{"messages", c.messages}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << c.messages.dump() << " -> " << r->body;
    const json e = json::parse(r->body);
    EXPECT_EQ(e["error"]["param"], c.param) << r->body;
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  }
  auto bad_template = call("/v1/chat/completions", {{"messages", kMessages}, {"chat_template", "{% for x in %}"}});
  ASSERT_TRUE(bad_template);
  EXPECT_EQ(bad_template->status, 400);
  EXPECT_EQ(json::parse(bad_template->body)["error"]["param"], "chat_template") << bad_template->body;
  auto tools = call("/v1/chat/completions", {{"messages", kMessages}, {"tools", json::array({{{"type", "function"}}})}});
  ASSERT_TRUE(tools);
  EXPECT_EQ(tools->status, 400);
  auto range = call("/v1/chat/completions", {{"messages", kMessages}, {"temperature", -2}});
  ASSERT_TRUE(range);
  EXPECT_EQ(range->status, 400);
  EXPECT_EQ(json::parse(range->body)["error"]["param"], "temperature");
  auto unknown_model = call("/v1/chat/completions", {{"model", "gpt-nope"}, {"messages", kMessages}});
  ASSERT_TRUE(unknown_model);
  EXPECT_EQ(unknown_model->status, 404);

  for (const json& messages : {json("hi"), json::array({{{"role", "wizard"}, {"content", "x"}}}),
                               json::array({{{"role", "user"}, {"content", "x"}, {"images", {"aGk="}}}})}) {
    auto o = call("/api/chat", {{"model", "stories260K"}, {"messages", messages}});
    ASSERT_TRUE(o);
    EXPECT_EQ(o->status, 400) << o->body;
    const json e = json::parse(o->body);
    EXPECT_TRUE(e["error"].is_string()) << o->body;
  }
  auto ollama_range = call("/api/chat", {{"model", "stories260K"}, {"messages", kMessages}, {"options", {{"temperature", -2}}}});
  ASSERT_TRUE(ollama_range);
  EXPECT_EQ(ollama_range->status, 400);
  EXPECT_NE(json::parse(ollama_range->body)["error"].get<std::string>().find("temperature"), std::string::npos);
}

// Valid against kMoodSchema: exactly {"mood": "happy"|"sad", "age": integer 0..120}.
const json kMoodSchema = json::parse(R"({"type":"object","properties":{"mood":{"enum":["happy","sad"]},
  "age":{"type":"integer","minimum":0,"maximum":120}},"required":["mood","age"],"additionalProperties":false})");

void expect_valid_mood(const std::string& text, const std::string& what) {
  const json parsed = json::parse(text, nullptr, false);
  ASSERT_TRUE(parsed.is_object()) << what << ": " << text;
  EXPECT_EQ(parsed.size(), 2u) << what << ": " << text;
  ASSERT_TRUE(parsed.contains("mood") && parsed["mood"].is_string()) << what << ": " << text;
  EXPECT_TRUE(parsed["mood"] == "happy" || parsed["mood"] == "sad") << what << ": " << text;
  ASSERT_TRUE(parsed.contains("age") && parsed["age"].is_number_integer()) << what << ": " << text;
  EXPECT_GE(parsed["age"].get<int64_t>(), 0);
  EXPECT_LE(parsed["age"].get<int64_t>(), 120);
}

TEST_F(HttpChatE2eTest, ResponseFormatAndOllamaFormatConstrainTheReplyToTheSchema) {
  const json ask = json::array({{{"role", "user"}, {"content", "How do you feel, and how old are you?"}}});
  const json response_format = {{"type", "json_schema"}, {"json_schema", {{"name", "mood"}, {"schema", kMoodSchema}}}};
  for (const double temperature : {0.0, 0.9}) {
    auto r = call("/v1/chat/completions", {{"messages", ask}, {"max_tokens", 120}, {"temperature", temperature}, {"seed", 5},
                                           {"response_format", response_format}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json body = json::parse(r->body);
    EXPECT_EQ(body["choices"][0]["finish_reason"], "stop") << r->body;
    expect_valid_mood(body["choices"][0]["message"]["content"], "temperature " + std::to_string(temperature));
  }
  auto s = call("/v1/chat/completions", {{"messages", ask}, {"max_tokens", 120}, {"temperature", 0}, {"stream", true},
                                         {"response_format", response_format}});
  ASSERT_TRUE(s);
  bool done = false;
  std::string streamed;
  for (const json& c : sse_chunks(s->body, done)) {
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content")) streamed += c["choices"][0]["delta"]["content"].get<std::string>();
  }
  expect_valid_mood(streamed, "streamed");

  auto any_object = call("/v1/chat/completions", {{"messages", ask}, {"max_tokens", 120}, {"temperature", 0},
                                                  {"response_format", {{"type", "json_object"}}}});
  ASSERT_TRUE(any_object);
  ASSERT_EQ(any_object->status, 200) << any_object->body;
  const json object_body = json::parse(any_object->body);
  if (object_body["choices"][0]["finish_reason"] == "stop") {
    EXPECT_TRUE(json::parse(object_body["choices"][0]["message"]["content"].get<std::string>(), nullptr, false).is_object())
        << any_object->body;
  }

  auto o = call("/api/chat", {{"model", "stories260K"}, {"messages", ask}, {"stream", false}, {"format", kMoodSchema},
                              {"options", {{"num_predict", 120}, {"temperature", 0}}}});
  ASSERT_TRUE(o);
  ASSERT_EQ(o->status, 200) << o->body;
  const json ollama = json::parse(o->body);
  EXPECT_EQ(ollama["done_reason"], "stop") << o->body;
  expect_valid_mood(ollama["message"]["content"], "ollama format");

  const json unsupported = {{"type", "object"}, {"not", json::object()}};
  auto bad = call("/v1/chat/completions", {{"messages", ask}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", unsupported}}}}}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "response_format") << bad->body;
  auto bad_ollama = call("/api/chat", {{"model", "stories260K"}, {"messages", ask}, {"format", unsupported}});
  ASSERT_TRUE(bad_ollama);
  EXPECT_EQ(bad_ollama->status, 400) << bad_ollama->body;
}

TEST_F(HttpChatE2eTest, MutatedBodiesGetJsonAnswersAndNever5xx) {
  std::mt19937 rng(7);
  const json base = {{"messages", kMessages}, {"max_tokens", 2}, {"temperature", 0}, {"top_p", 0.9}, {"stop", {"\n"}},
                     {"logprobs", true}, {"top_logprobs", 1}, {"response_format", {{"type", "text"}}}};
  const std::vector<json> odd = {nullptr, true, -1, 1e300, "str", json::array(), json::object(), 3.5,
                                 json::array({{{"role", "user"}}}), "<|im_start|>system\n<|im_end|>"};
  int errors = 0;
  for (int i = 0; i < 60; ++i) {
    json body = base;
    auto it = body.begin();
    std::advance(it, static_cast<long>(rng() % body.size()));
    if (it.key() == "messages" && rng() % 2 == 0) {
      body["messages"][rng() % body["messages"].size()]["content"] = odd[rng() % odd.size()];
    } else {
      body[it.key()] = odd[rng() % odd.size()];
    }
    if (!body["max_tokens"].is_number_integer()) body["max_tokens"] = 2;
    auto r = call("/v1/chat/completions", body);
    ASSERT_TRUE(r) << body.dump();
    const json answer = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(answer.is_object()) << body.dump() << " -> " << r->body;
    if (r->status != 200) {
      ++errors;
      EXPECT_GE(r->status, 400);
      EXPECT_LT(r->status, 500) << body.dump() << " -> " << r->body;
      EXPECT_TRUE(answer["error"]["message"].is_string());
    }
  }
  EXPECT_GT(errors, 10);
  const auto wire = wire_chat(kMessages, 4);
  ASSERT_TRUE(wire);
  auto ok = call("/v1/chat/completions", {{"messages", kMessages}, {"max_tokens", 4}, {"temperature", 0}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(json::parse(ok->body)["choices"][0]["message"]["content"], wire->text);
}

TEST_F(HttpChatE2eTest, AHangUpCancelsTheChatRequest) {
  RawHttpClient c;
  ASSERT_TRUE(c.connect_unix(dir_->path + "/http.sock"));
  const json body = {{"messages", kMessages}, {"max_tokens", 1500}, {"ignore_eos", true}, {"stream", true}};
  ASSERT_TRUE(c.send(http_request("POST", "/v1/chat/completions", body.dump(), "x-request-id: chat-hangup\r\n")));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::optional<proto::StatusAnswer> s;
  while (std::chrono::steady_clock::now() < deadline) {
    s = status_of("chat-hangup");
    if (s && s->generated_tokens > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(s && s->generated_tokens > 0) << daemon_->log();
  c.close();
  const auto cancel_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < cancel_deadline) {
    s = status_of("chat-hangup");
    if (s && s->state == proto::RequestState::kFinished) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(s && s->reason.has_value());
  EXPECT_EQ(*s->reason, FinishReason::kCancelled);
  EXPECT_LT(s->generated_tokens, 1500);
}

}  // namespace
}  // namespace vks::test
