// End to end: tool calls on /v1/chat/completions and /api/chat against the real vkstreamd (CPU
// reference) serving tiny random-weight models made with the Qwen2.5 vocabulary and template
// (native <tool_call> format) and the Llama 3 one (no tool syntax: the generic format). Their
// text is gibberish, so only structure is checked: with tool_choice "required" or a named
// function every call parses and validates against its tool's schema (enforced by a grammar),
// streamed delta.tool_calls reassemble to the non-streamed calls, tool results in the history
// render, and bad tool requests get a 400 naming the field; /v1/messages (Anthropic) tool_use;
// /v1/responses function calls; an HTTP chat's calls as tool_call events on its PUB topic; a
// request's own chat_template deciding the call format; and CORS on the same daemons (local pages
// allowed, other origins not).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zmq.h>

#include <csignal>
#include <cstdlib>
#include <set>
#include <sstream>

#include "tests/common/llama31_tool_template.h"
#include "tests/common/test_models.h"
#include "tests/http/http_test_client.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

using nlohmann::json;

const json kTools = json::parse(R"([
  {"type":"function","function":{"name":"get_weather","description":"Weather in a city",
   "parameters":{"type":"object","properties":{"city":{"enum":["Paris","Rome"]},"days":{"type":"integer","minimum":1,"maximum":9}},
                 "required":["city","days"],"additionalProperties":false}}},
  {"type":"function","function":{"name":"set_alarm","description":"Set an alarm",
   "parameters":{"type":"object","properties":{"loud":{"type":"boolean"}},"required":["loud"],"additionalProperties":false}}}])");

const json kAsk = json::array({{{"role", "user"}, {"content", "What is the weather in Paris?"}}});

// The arguments validate against the tool's schema above (written out: the schemas are small).
void expect_valid_call(const json& call) {
  ASSERT_TRUE(call["function"]["arguments"].is_string()) << call;
  const json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(args.is_object()) << call;
  const std::string name = call["function"]["name"];
  if (name == "get_weather") {
    EXPECT_EQ(args.size(), 2u) << args;
    EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Rome") << args;
    ASSERT_TRUE(args["days"].is_number_integer()) << args;
    EXPECT_GE(args["days"].get<int>(), 1);
    EXPECT_LE(args["days"].get<int>(), 9);
  } else {
    EXPECT_EQ(name, "set_alarm");
    EXPECT_EQ(args.size(), 1u) << args;
    EXPECT_TRUE(args["loud"].is_boolean()) << args;
  }
}

class ToolsDaemon {
 public:
  ToolsDaemon(const std::string& vocab_file, const std::string& name) : name_(name) {
    model_ = dir_.path + "/" + name + ".gguf";
    const std::string cmd = "'" + build_dir() + "/tools/vks-make-model' --dim 32 --layers 1 --heads 2 --kv-heads 1 --hidden 64 "
                            "--context 1024 --tied --vocab-from '" + model_path(vocab_file) + "' -q -o '" + model_ + "'";
    made_ = std::system(cmd.c_str()) == 0;
    if (!made_) return;
    DaemonConfig config;
    config.dir = dir_.path;
    config.with_model = false;
    config.extra_args = {"--model", model_, "--cpu", "--http", "unix:" + dir_.path + "/http.sock"};
    daemon_.start(config);
    ready_ = daemon_.wait_ready(120);
  }
  ~ToolsDaemon() {
    if (!ready_) return;
    daemon_.signal(SIGTERM);
    EXPECT_EQ(daemon_.wait_exit(20), 0) << daemon_.log();
  }
  bool ready() const { return made_ && ready_; }
  const std::string& name() const { return name_; }
  const DaemonProcess& process() const { return daemon_; }
  std::string log() { return daemon_.log(); }

  // The body as ordered JSON: a schema's property order is part of what is tested.
  std::optional<RawResponse> call(const std::string& path, const nlohmann::ordered_json& body, const std::string& method = "POST",
                                  const std::string& headers = {}) {
    RawHttpClient c;
    if (!c.connect_unix(dir_.path + "/http.sock")) return std::nullopt;
    if (!c.send(http_request(method, path, method == "POST" ? body.dump() : "", headers))) return std::nullopt;
    return c.read_response(60000);
  }

 private:
  std::string name_;
  TempDir dir_;
  DaemonProcess daemon_;
  std::string model_;
  bool made_ = false;
  bool ready_ = false;
};

std::vector<json> sse_events(const std::string& body) {
  std::vector<json> chunks;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: {", 0) == 0) chunks.push_back(json::parse(line.substr(6)));
  }
  return chunks;
}

// The streamed answer put back together: content, calls by index (fragments concatenated),
// finish_reason.
json reassemble(const std::vector<json>& chunks) {
  std::string content;
  json calls = json::array();
  json finish = nullptr;
  for (const json& c : chunks) {
    if (c["choices"].empty()) continue;
    const json& choice = c["choices"][0];
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
    const json& delta = choice["delta"];
    if (delta.contains("content") && delta["content"].is_string()) content += delta["content"].get<std::string>();
    if (!delta.contains("tool_calls")) continue;
    for (const json& fragment : delta["tool_calls"]) {
      const size_t index = fragment["index"];
      while (calls.size() <= index) calls.push_back({{"function", {{"name", ""}, {"arguments", ""}}}});
      json& call = calls[index];
      if (fragment.contains("id")) call["id"] = fragment["id"];
      if (fragment.contains("type")) call["type"] = fragment["type"];
      if (fragment["function"].contains("name")) call["function"]["name"] = call["function"]["name"].get<std::string>() + fragment["function"]["name"].get<std::string>();
      if (fragment["function"].contains("arguments")) {
        call["function"]["arguments"] = call["function"]["arguments"].get<std::string>() + fragment["function"]["arguments"].get<std::string>();
      }
    }
  }
  return {{"content", content}, {"tool_calls", calls}, {"finish_reason", finish}};
}

class ToolsE2e : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    qwen_ = new ToolsDaemon("qwen2-vocab.gguf", "qwen-tools");
    llama_ = new ToolsDaemon("llama3-vocab.gguf", "llama-tools");
  }
  static void TearDownTestSuite() {
    delete qwen_;
    delete llama_;
  }
  ToolsDaemon& d() { return std::string(GetParam()) == "qwen" ? *qwen_ : *llama_; }
  void SetUp() override { ASSERT_TRUE(d().ready()) << "daemon did not start:\n" << d().log(); }

  json chat(json body) {
    body["model"] = d().name();
    if (!body.contains("max_tokens")) body["max_tokens"] = 160;
    auto r = d().call("/v1/chat/completions", body);
    if (!r) return {{"status", 0}};
    json out = json::parse(r->body, nullptr, false);
    if (!out.is_object()) out = {{"raw", r->body}};
    out["status"] = r->status;
    return out;
  }
  // The same request streamed: chat()'s model and max_tokens, "stream": true.
  std::optional<RawResponse> chat_streamed(json body) {
    body["stream"] = true;
    body["model"] = d().name();
    if (!body.contains("max_tokens")) body["max_tokens"] = 160;
    return d().call("/v1/chat/completions", body);
  }

  static ToolsDaemon* qwen_;
  static ToolsDaemon* llama_;
};
ToolsDaemon* ToolsE2e::qwen_ = nullptr;
ToolsDaemon* ToolsE2e::llama_ = nullptr;

TEST_P(ToolsE2e, RequiredCallsParseAndValidate) {
  for (int seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    // parallel_tool_calls: false = exactly one call, then the grammar ends the turn; true = the
    // random model may go on calling until max_tokens cuts the last call (which stays text).
    const bool parallel = seed > 2;
    const json r = chat({{"messages", kAsk}, {"tools", kTools}, {"tool_choice", "required"}, {"seed", seed},
                         {"temperature", 1.0}, {"parallel_tool_calls", parallel}});
    ASSERT_EQ(r["status"], 200) << r;
    const json& choice = r["choices"][0];
    const json& calls = choice["message"]["tool_calls"];
    ASSERT_TRUE(calls.is_array() && !calls.empty()) << r;
    if (!parallel) {
      EXPECT_EQ(calls.size(), 1u) << r;
      EXPECT_EQ(choice["finish_reason"], "tool_calls") << r;
      EXPECT_TRUE(choice["message"]["content"].is_null()) << r;  // the grammar allows no text
    } else if (choice["finish_reason"] == "length") {
      // A cut call stays text; a cut right after a call leaves none (content null).
      const json& content = choice["message"]["content"];
      const std::string text = content.is_string() ? content.get<std::string>() : "";
      EXPECT_TRUE(content.is_null() || content.is_string()) << r;
      EXPECT_EQ(text.find("<tool_call>") == std::string::npos, text.find("{") == std::string::npos) << r;
    } else {
      EXPECT_EQ(choice["finish_reason"], "tool_calls") << r;
    }
    std::set<std::string> ids;
    for (const json& call : calls) {
      EXPECT_EQ(call["type"], "function");
      ids.insert(call["id"].get<std::string>());
      expect_valid_call(call);
    }
    EXPECT_EQ(ids.size(), calls.size());
  }
}

TEST_P(ToolsE2e, NamedFunctionIsTheOnlyOneCalled) {
  const json r = chat({{"messages", kAsk}, {"tools", kTools}, {"seed", 7}, {"temperature", 1.0}, {"parallel_tool_calls", false},
                       {"tool_choice", {{"type", "function"}, {"function", {{"name", "set_alarm"}}}}}});
  ASSERT_EQ(r["status"], 200) << r;
  const json& calls = r["choices"][0]["message"]["tool_calls"];
  ASSERT_FALSE(calls.empty()) << r;
  for (const json& call : calls) {
    EXPECT_EQ(call["function"]["name"], "set_alarm");
    expect_valid_call(call);
  }
}

TEST_P(ToolsE2e, StreamedDeltasReassembleToTheWholeAnswer) {
  const json body = {{"messages", kAsk}, {"tools", kTools}, {"tool_choice", "required"}, {"seed", 3}, {"temperature", 1.0}};
  const json whole = chat(body);
  ASSERT_EQ(whole["status"], 200) << whole;
  auto r = chat_streamed(body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::vector<json> events = sse_events(r->body);
  const json joined = reassemble(events);
  const json& message = whole["choices"][0]["message"];
  // The first call's arguments came in fragments as they were generated (OpenAI's way): the first
  // delta names the call, more than one carries arguments.
  int argument_pieces = 0;
  bool named_first = false;
  for (const json& c : events) {
    if (c["choices"].empty() || !c["choices"][0]["delta"].contains("tool_calls")) continue;
    const json& fragment = c["choices"][0]["delta"]["tool_calls"][0];
    if (fragment["index"] != 0) continue;
    if (argument_pieces == 0) named_first = fragment.contains("id") && fragment["function"].contains("name");
    if (fragment["function"].contains("arguments") && !fragment["function"]["arguments"].get<std::string>().empty()) ++argument_pieces;
  }
  EXPECT_TRUE(named_first) << r->body;
  EXPECT_GT(argument_pieces, 1) << r->body;
  EXPECT_EQ(joined["finish_reason"], whole["choices"][0]["finish_reason"]);
  ASSERT_EQ(joined["tool_calls"].size(), message["tool_calls"].size()) << r->body;
  for (size_t i = 0; i < message["tool_calls"].size(); ++i) {
    EXPECT_EQ(joined["tool_calls"][i]["function"], message["tool_calls"][i]["function"]);
    EXPECT_EQ(joined["tool_calls"][i]["type"], "function");
  }
  EXPECT_EQ(joined["content"], message["content"].is_null() ? "" : message["content"].get<std::string>());
}

// n > 1: each choice's answer is parsed on its own (its own calls, ids naming its own request), and
// each index's streamed deltas reassemble to that choice of the whole answer.
TEST_P(ToolsE2e, EachOfNChoicesParsesItsOwnCalls) {
  const json body = {{"messages", kAsk}, {"tools", kTools}, {"tool_choice", "required"}, {"seed", 5}, {"temperature", 1.0},
                     {"parallel_tool_calls", false}, {"n", 3}};
  const json whole = chat(body);
  ASSERT_EQ(whole["status"], 200) << whole;
  ASSERT_EQ(whole["choices"].size(), 3u) << whole;
  std::set<std::string> ids;
  for (size_t i = 0; i < 3; ++i) {
    const json& choice = whole["choices"][i];
    EXPECT_EQ(choice["index"], i);
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << whole;
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << whole;
    expect_valid_call(choice["message"]["tool_calls"][0]);
    ids.insert(choice["message"]["tool_calls"][0]["id"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 3u) << whole;
  auto r = chat_streamed(body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::vector<std::vector<json>> by_index(3);
  for (const json& c : sse_events(r->body)) {
    if (c["choices"].empty()) continue;
    by_index.at(c["choices"][0]["index"].get<size_t>()).push_back(c);
  }
  std::set<std::string> streamed_ids;
  for (size_t i = 0; i < 3; ++i) {
    const json joined = reassemble(by_index[i]);
    const json& message = whole["choices"][i]["message"];
    EXPECT_EQ(joined["finish_reason"], whole["choices"][i]["finish_reason"]) << i;
    ASSERT_EQ(joined["tool_calls"].size(), 1u) << r->body;
    EXPECT_EQ(joined["tool_calls"][0]["function"], message["tool_calls"][0]["function"]) << i;
    streamed_ids.insert(joined["tool_calls"][0]["id"].get<std::string>());
  }
  EXPECT_EQ(streamed_ids.size(), 3u) << r->body;
}

// tool_choice "auto": a logit bias on Qwen's <tool_call> token makes the random model start a call
// at once; from the marker on the lazy grammar holds it to a valid call (without it the random
// model's gibberish after the marker would not parse and would come back as text).
TEST_P(ToolsE2e, AutoCallsOnceStartedParseAndValidate) {
  if (std::string(GetParam()) != "qwen") GTEST_SKIP() << "the Llama 3 vocabulary has no single token for the <tool_call> marker";
  const json bias = {{"151657", 100}};  // <tool_call> (USER_DEFINED in the Qwen2.5 vocabulary)
  for (int seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const json body = {{"messages", kAsk}, {"tools", kTools}, {"tool_choice", "auto"}, {"seed", seed},
                       {"temperature", 1.0}, {"parallel_tool_calls", false}, {"logit_bias", bias}};
    const json r = chat(body);
    ASSERT_EQ(r["status"], 200) << r;
    const json& choice = r["choices"][0];
    const json calls = choice["message"].value("tool_calls", json::array());
    ASSERT_EQ(calls.size(), 1u) << r;
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << r;
    EXPECT_TRUE(choice["message"]["content"].is_null()) << r;
    expect_valid_call(calls[0]);
    if (seed > 1) continue;
    auto streamed = chat_streamed(body);
    ASSERT_TRUE(streamed);
    ASSERT_EQ(streamed->status, 200) << streamed->body;
    const json joined = reassemble(sse_events(streamed->body));
    EXPECT_EQ(joined["finish_reason"], "tool_calls");
    ASSERT_EQ(joined["tool_calls"].size(), 1u) << streamed->body;
    EXPECT_EQ(joined["tool_calls"][0]["function"], calls[0]["function"]);
  }
}

TEST_P(ToolsE2e, ToolResultsInTheHistoryAreRendered) {
  const json history = json::array(
      {kAsk[0],
       {{"role", "assistant"}, {"content", nullptr},
        {"tool_calls", json::array({{{"id", "call_1"}, {"type", "function"},
                                     {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Paris","days":2})"}}}}})}},
       {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "Sunny, 24 degrees."}}});
  const json without = chat({{"messages", kAsk}, {"tools", kTools}, {"max_tokens", 4}});
  const json with = chat({{"messages", history}, {"tools", kTools}, {"max_tokens", 4}});
  ASSERT_EQ(without["status"], 200) << without;
  ASSERT_EQ(with["status"], 200) << with;
  EXPECT_GT(with["usage"]["prompt_tokens"].get<int>(), without["usage"]["prompt_tokens"].get<int>() + 10);
  // auto: an answer is text or calls, and either way has the chat.completion shape.
  const json& m = with["choices"][0]["message"];
  EXPECT_TRUE(m["content"].is_string() || m.contains("tool_calls")) << with;
}

TEST_P(ToolsE2e, OllamaChatCallsWithArgumentsAsObjects) {
  json body = {{"model", d().name()}, {"messages", kAsk}, {"tools", kTools}, {"tool_choice", "required"}, {"stream", false},
               {"options", {{"seed", 5}, {"temperature", 1.0}, {"num_predict", 160}}}};
  auto r = d().call("/api/chat", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json answer = json::parse(r->body);
  const json& calls = answer["message"]["tool_calls"];
  ASSERT_FALSE(calls.empty()) << answer;
  for (const json& call : calls) {
    ASSERT_TRUE(call["function"]["arguments"].is_object()) << call;
    json as_openai = call;
    as_openai["function"]["arguments"] = call["function"]["arguments"].dump();
    expect_valid_call(as_openai);
  }
  // One call that ends the turn: Ollama's done_reason is "stop" (the wire's finish says tool_calls).
  json one_call = body;
  one_call["parallel_tool_calls"] = false;
  r = d().call("/api/chat", one_call);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json single = json::parse(r->body);
  EXPECT_EQ(single["message"]["tool_calls"].size(), 1u) << single;
  EXPECT_EQ(single["done_reason"], "stop") << single;
  // Streamed: the calls come in message.tool_calls of the NDJSON lines.
  body["stream"] = true;
  r = d().call("/api/chat", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json streamed_calls = json::array();
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const json l = json::parse(line);
    if (l["message"].contains("tool_calls")) {
      for (const json& c : l["message"]["tool_calls"]) streamed_calls.push_back(c);
    }
  }
  EXPECT_EQ(streamed_calls, calls);
}

TEST_P(ToolsE2e, BadToolRequestsName400Fields) {
  auto param_of = [&](const json& body) {
    const json r = chat(body);
    EXPECT_EQ(r["status"], 400) << r;
    return r.contains("error") ? r["error"]["param"] : json();
  };
  EXPECT_EQ(param_of({{"messages", kAsk}, {"tool_choice", "required"}}), "tool_choice");
  EXPECT_EQ(param_of({{"messages", kAsk}, {"tools", json::array({{{"type", "function"}, {"function", json::object()}}})}}),
            "tools.0.function.name");
  EXPECT_EQ(param_of({{"messages", kAsk}, {"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}),
            "tool_choice");
  EXPECT_EQ(param_of({{"messages", kAsk}, {"tools", kTools}, {"tool_choice", "required"}, {"grammar", "root ::= \"x\""}}),
            "tool_choice");
  // A response format is for a text answer: a forced call (the whole answer) is not bound by it.
  const json forced = chat({{"messages", kAsk}, {"tools", kTools}, {"tool_choice", "required"}, {"parallel_tool_calls", false},
                            {"seed", 5}, {"response_format", {{"type", "json_object"}}}});
  ASSERT_EQ(forced["status"], 200) << forced;
  ASSERT_EQ(forced["choices"][0]["message"]["tool_calls"].size(), 1u) << forced;
  expect_valid_call(forced["choices"][0]["message"]["tool_calls"][0]);
  json bad_history = kAsk;
  bad_history.push_back({{"role", "assistant"}, {"tool_calls", json::array({{{"function", {{"name", "f"}, {"arguments", "{oops"}}}}})}});
  EXPECT_EQ(param_of({{"messages", bad_history}, {"tools", kTools}}), "messages.1.tool_calls.0.function.arguments");
}

// Anthropic Messages: tool_choice any gives tool_use blocks whose input validates (stop_reason
// tool_use); streamed, the typed events rebuild the same blocks; tool_result turns are accepted.
TEST_P(ToolsE2e, AnthropicMessagesToolUse) {
  json tools = json::array();
  for (const json& t : kTools) {
    tools.push_back({{"name", t["function"]["name"]}, {"description", t["function"]["description"]},
                     {"input_schema", t["function"]["parameters"]}});
  }
  const json body = {{"model", d().name()}, {"max_tokens", 160}, {"system", "You call tools."}, {"messages", kAsk},
                     {"tools", tools}, {"tool_choice", {{"type", "any"}, {"disable_parallel_tool_use", true}}},
                     {"temperature", 0}};  // greedy: the streamed request gives the same answer
  auto r = d().call("/v1/messages", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json message = json::parse(r->body);
  EXPECT_EQ(message["type"], "message");
  EXPECT_EQ(message["stop_reason"], "tool_use") << message;
  ASSERT_EQ(message["content"].size(), 1u) << message;
  const json& block = message["content"][0];
  EXPECT_EQ(block["type"], "tool_use");
  expect_valid_call({{"function", {{"name", block["name"]}, {"arguments", block["input"].dump()}}}});

  json streamed_body = body;
  streamed_body["stream"] = true;
  r = d().call("/v1/messages", streamed_body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::vector<std::string> names;
  json blocks = json::array();
  std::string stop_reason;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("event: ", 0) == 0) names.push_back(line.substr(7));
    if (line.rfind("data: ", 0) != 0) continue;
    const json e = json::parse(line.substr(6));
    if (e["type"] == "content_block_start") blocks.push_back(e["content_block"]);
    if (e["type"] == "content_block_delta" && e["delta"]["type"] == "input_json_delta") {
      blocks.back()["partial"] = blocks.back().value("partial", "") + e["delta"]["partial_json"].get<std::string>();
      blocks.back()["pieces"] = blocks.back().value("pieces", 0) + 1;
    }
    if (e["type"] == "message_delta") stop_reason = e["delta"]["stop_reason"];
  }
  ASSERT_GE(names.size(), 5u) << r->body;
  EXPECT_EQ(names.front(), "message_start");
  EXPECT_EQ(names.back(), "message_stop");
  EXPECT_EQ(names[names.size() - 2], "message_delta");
  EXPECT_EQ(stop_reason, "tool_use");
  ASSERT_EQ(blocks.size(), 1u) << r->body;
  EXPECT_EQ(blocks[0]["name"], block["name"]);
  EXPECT_EQ(json::parse(blocks[0]["partial"].get<std::string>()), block["input"]);
  EXPECT_GT(blocks[0]["pieces"].get<int>(), 1) << r->body;  // the input streamed as it was generated

  json history = body;
  history["tool_choice"] = {{"type", "auto"}};
  history["max_tokens"] = 4;
  history["messages"] = json::array({kAsk[0],
                                     {{"role", "assistant"}, {"content", json::array({block})}},
                                     {{"role", "user"}, {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", block["id"]},
                                                                                  {"content", "Sunny"}}})}}});
  r = d().call("/v1/messages", history);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  json no_max = body;
  no_max.erase("max_tokens");
  r = d().call("/v1/messages", no_max);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
}

// CORS: a page on localhost may call the API (preflight 204, Access-Control-Allow-Origin on the
// answer, streamed or not); another origin gets neither.
TEST_P(ToolsE2e, CorsAllowsLocalPagesOnly) {
  auto pre = d().call("/v1/chat/completions", {}, "OPTIONS",
                      "Origin: http://localhost:5173\r\nAccess-Control-Request-Method: POST\r\n"
                      "Access-Control-Request-Headers: content-type, authorization\r\n");
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  ASSERT_NE(pre->header("access-control-allow-origin"), nullptr);
  EXPECT_EQ(*pre->header("access-control-allow-origin"), "http://localhost:5173");
  auto refused = d().call("/v1/chat/completions", {}, "OPTIONS",
                          "Origin: https://evil.example\r\nAccess-Control-Request-Method: POST\r\n");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403);
  EXPECT_EQ(refused->header("access-control-allow-origin"), nullptr);
  const json body = {{"model", d().name()}, {"messages", kAsk}, {"max_tokens", 2}};
  for (bool stream : {false, true}) {
    json b = body;
    b["stream"] = stream;
    auto local = d().call("/v1/chat/completions", b, "POST", "Origin: http://127.0.0.1:8080\r\n");
    ASSERT_TRUE(local);
    EXPECT_EQ(local->status, 200);
    ASSERT_NE(local->header("access-control-allow-origin"), nullptr) << stream;
    EXPECT_EQ(*local->header("access-control-allow-origin"), "http://127.0.0.1:8080");
    auto other = d().call("/v1/chat/completions", b, "POST", "Origin: https://evil.example\r\n");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->header("access-control-allow-origin"), nullptr) << stream;
  }
}

// OpenAI Responses (stateless): a required call is a function_call output item that validates;
// streamed, its item opens with its name, then response.function_call_arguments.delta comes in
// several pieces as the arguments are generated and rebuilds it between response.created and
// response.completed; text.format's schema comes out in its declared order; no stored responses.
TEST_P(ToolsE2e, ResponsesFunctionCallsAndSchemaOrder) {
  json tools = json::array();
  for (const json& t : kTools) {
    tools.push_back({{"type", "function"}, {"name", t["function"]["name"]}, {"parameters", t["function"]["parameters"]}});
  }
  const json body = {{"model", d().name()}, {"instructions", "Call a tool."}, {"input", "Weather in Paris?"}, {"tools", tools},
                     {"tool_choice", "required"}, {"parallel_tool_calls", false}, {"temperature", 0}, {"max_output_tokens", 160}};
  auto r = d().call("/v1/responses", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json whole = json::parse(r->body);
  EXPECT_EQ(whole["object"], "response");
  EXPECT_EQ(whole["status"], "completed") << whole;
  ASSERT_EQ(whole["output"].size(), 1u) << whole;
  const json& item = whole["output"][0];
  EXPECT_EQ(item["type"], "function_call");
  expect_valid_call({{"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}});

  json streamed_body = body;
  streamed_body["stream"] = true;
  r = d().call("/v1/responses", streamed_body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::vector<std::string> types;
  std::string arguments;
  int deltas = 0;
  int64_t last_sequence = -1;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: ", 0) != 0) continue;
    const json e = json::parse(line.substr(6));
    types.push_back(e["type"]);
    EXPECT_EQ(e["sequence_number"].get<int64_t>(), last_sequence + 1);
    last_sequence = e["sequence_number"];
    if (e["type"] == "response.output_item.added") {  // the call's item opens before its arguments
      EXPECT_EQ(e["item"]["type"], "function_call");
      EXPECT_EQ(e["item"]["name"], item["name"]);
      EXPECT_EQ(deltas, 0);
    }
    if (e["type"] == "response.function_call_arguments.delta") {
      arguments += e["delta"].get<std::string>();
      ++deltas;
    }
    if (e["type"] == "response.function_call_arguments.done") {
      EXPECT_EQ(e["arguments"], arguments);
    }
    if (e["type"] == "response.completed") {  // ids differ per request; the call is the same
      ASSERT_EQ(e["response"]["output"].size(), 1u);
      EXPECT_EQ(e["response"]["output"][0]["name"], item["name"]);
      EXPECT_EQ(e["response"]["output"][0]["arguments"], item["arguments"]);
    }
  }
  ASSERT_FALSE(types.empty());
  EXPECT_EQ(types.front(), "response.created");
  EXPECT_EQ(types.back(), "response.completed");
  EXPECT_EQ(arguments, item["arguments"]);
  // Streamed as generated: a call of several tokens comes in several deltas.
  EXPECT_GT(deltas, 1) << r->body;
  expect_valid_call({{"function", {{"name", item["name"]}, {"arguments", arguments}}}});

  const auto schema = nlohmann::ordered_json::parse(R"({"type":"object","properties":{"reasoning":{"type":"string","maxLength":6},
      "answer":{"type":"string","maxLength":6}},"required":["reasoning","answer"],"additionalProperties":false})");
  nlohmann::ordered_json schema_body = {{"model", d().name()}, {"input", "Why?"}, {"max_output_tokens", 200}, {"temperature", 0}};
  schema_body["text"]["format"] = {{"type", "json_schema"}, {"name", "r"}, {"schema", schema}};
  r = d().call("/v1/responses", schema_body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json text_answer = json::parse(r->body);
  ASSERT_EQ(text_answer["output"][0]["type"], "message") << text_answer;
  const auto ordered = nlohmann::ordered_json::parse(text_answer["output"][0]["content"][0]["text"].get<std::string>());
  ASSERT_EQ(ordered.size(), 2u);
  EXPECT_EQ(ordered.begin().key(), "reasoning");  // declared order, not sorted

  r = d().call("/v1/responses", {{"input", "x"}, {"previous_response_id", "resp_1"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

// The tool_call events the daemon published for request `id` (its topic, found by status, replays
// the retained stream from seq 0), and its finish reason.
std::pair<std::vector<proto::StreamEvent>, std::optional<FinishReason>> published_calls(const DaemonProcess& daemon,
                                                                                     const std::string& id) {
  std::vector<proto::StreamEvent> calls;
  UdsClient watcher;
  if (!watcher.connect(daemon.socket_path())) return {calls, std::nullopt};
  auto st = request(watcher, simple(proto::StatusRequest{id}, 1));
  const auto* status = st ? std::get_if<proto::StatusAnswer>(&st->body) : nullptr;
  if (status == nullptr) return {calls, std::nullopt};
  void* ctx = zmq_ctx_new();
  std::optional<FinishReason> reason;
  {
    ZmqSubscriber sub(ctx);
    StreamCollector stream{id};
    if (sub.connect(daemon.pub_endpoint())) {
      sub.subscribe(status->topic);
      if (collect(sub, stream, 20000) && stream.complete()) {
        for (const auto& ev : stream.by_seq) {
          if (ev->type == proto::StreamEventType::kToolCall) calls.push_back(*ev);
          if (ev->type == proto::StreamEventType::kFinished) reason = ev->reason;
        }
      }
    }
  }
  zmq_ctx_term(ctx);
  return {calls, reason};
}

// The HTTP answer's calls and finish_reason, as its topic published them.
void expect_published(const DaemonProcess& daemon, const std::string& id, const json& calls, const std::string& finish_reason) {
  auto [published, reason] = published_calls(daemon, id);
  ASSERT_TRUE(reason) << "no complete stream on the request's topic";
  EXPECT_EQ(proto::finish_reason_wire_name(*reason), finish_reason);
  ASSERT_EQ(published.size(), calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(published[i].call_index, static_cast<int32_t>(i));
    EXPECT_EQ(published[i].call_id, calls[i]["id"]);
    EXPECT_EQ(published[i].call_name, calls[i]["function"]["name"]);
    EXPECT_EQ(published[i].call_arguments, calls[i]["function"]["arguments"]);
  }
}

// An HTTP chat with tools publishes its calls as tool_call events on its PUB topic, as the msgpack
// chat does (one preparation for both): the same calls as the HTTP answer, then finished with its
// finish reason (tool_calls, or length when the bound cut further parallel calls).
TEST_P(ToolsE2e, HttpChatCallsAreToolCallEventsOnItsTopic) {
  const json body = {{"model", d().name()}, {"messages", kAsk}, {"tools", kTools}, {"tool_choice", "required"},
                     {"temperature", 0}, {"max_tokens", 160}};
  auto r = d().call("/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json answer = json::parse(r->body);
  const json& calls = answer["choices"][0]["message"]["tool_calls"];
  ASSERT_TRUE(calls.is_array() && !calls.empty()) << answer;
  const std::string* id = r->header("x-request-id");
  ASSERT_NE(id, nullptr);
  expect_published(d().process(), *id, calls, answer["choices"][0]["finish_reason"]);
}

// A request's own chat_template decides the format its answer is parsed in, not the served
// template's: its forced call (written in its format by the grammar) is a call, whole, streamed
// and on the PUB topic.
TEST_P(ToolsE2e, RequestTemplateDecidesTheCallFormat) {
  const json body = {{"messages", kAsk}, {"tools", kTools}, {"tool_choice", "required"}, {"parallel_tool_calls", false},
                     {"temperature", 0}, {"chat_template", kLlama31LikeTemplate}};
  json sent = body;
  sent["model"] = d().name();
  sent["max_tokens"] = 160;
  auto r = d().call("/v1/chat/completions", sent);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json whole = json::parse(r->body);
  const json& message = whole["choices"][0]["message"];
  ASSERT_TRUE(message["tool_calls"].is_array()) << whole;
  ASSERT_EQ(message["tool_calls"].size(), 1u) << whole;
  EXPECT_TRUE(message["content"].is_null()) << whole;  // nothing of the call left as text
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  expect_valid_call(message["tool_calls"][0]);
  const std::string* id = r->header("x-request-id");
  ASSERT_NE(id, nullptr);
  expect_published(d().process(), *id, message["tool_calls"], "tool_calls");

  auto streamed = chat_streamed(body);
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200) << streamed->body;
  const json rebuilt = reassemble(sse_events(streamed->body));
  ASSERT_EQ(rebuilt["tool_calls"].size(), 1u) << rebuilt;
  EXPECT_EQ(rebuilt["tool_calls"][0]["function"], message["tool_calls"][0]["function"]);
  EXPECT_EQ(rebuilt["content"], "");
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, ToolsE2e, ::testing::Values("qwen", "llama"));

}  // namespace
}  // namespace vks::test
