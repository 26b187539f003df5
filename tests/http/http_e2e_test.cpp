// End to end: the real vkstreamd (CPU reference, stories260K) with --http, spoken to with raw
// HTTP/1.1: OpenAI and Ollama generations reproduce the greedy reference text, streamed and not;
// the request is the same request on the Unix socket (status); a client that disconnects
// mid-generation cancels it; errors are JSON with the right status; API keys; mutated bodies.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/common/test_models.h"
#include "tests/http/http_daemon_suite.h"
#include "tests/server/held_load.h"

namespace vks::test {
namespace {

using nlohmann::json;

const char* kPrompt = "Once upon a time";

std::string reference_continuation() {
  std::ifstream in(models_dir() + "/reference/stories260K_greedy_once_upon_a_time_n64.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.substr(std::string(kPrompt).size());
}

std::string trim_end(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class HttpE2eTest : public HttpDaemonSuite {
 protected:
  static std::optional<RawResponse> call(const std::string& method, const std::string& path, const std::string& body = {},
                                         const std::string& headers = {}) {
    RawHttpClient c;
    if (!c.connect_unix(http_path())) return std::nullopt;
    if (!c.send(http_request(method, path, body, headers))) return std::nullopt;
    return c.read_response(30000);
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

const std::string kGreedy60 = R"({"model":"stories260K","prompt":"Once upon a time","max_tokens":60,"temperature":0)";

TEST_F(HttpE2eTest, OpenAiCompletionReproducesTheGreedyReference) {
  auto r = call("POST", "/v1/completions", kGreedy60 + "}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  EXPECT_EQ(trim_end(body["choices"][0]["text"]), reference_continuation());
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["completion_tokens"], 60);
  EXPECT_EQ(body["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(body["object"], "text_completion");
  ASSERT_NE(r->header("x-request-id"), nullptr);
  EXPECT_EQ(body["id"], "cmpl-" + *r->header("x-request-id"));
  // The same request on the Unix socket: `vkstream status/follow/cancel ID` work on HTTP requests.
  auto s = status_of(*r->header("x-request-id"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, proto::RequestState::kFinished);
  EXPECT_EQ(s->generated_tokens, 60);
  EXPECT_FALSE(s->topic.empty());
}

TEST_F(HttpE2eTest, OpenAiStreamIsSseEndingWithDoneAndUsage) {
  auto r = call("POST", "/v1/completions", kGreedy60 + R"(,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(*r->header("content-type"), "text/event-stream");
  std::string text;
  std::string finish;
  json usage;
  bool done = false;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    ASSERT_EQ(line.rfind("data: ", 0), 0u) << line;
    ASSERT_FALSE(done) << "data after [DONE]";
    const std::string data = line.substr(6);
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    const json chunk = json::parse(data);
    EXPECT_EQ(chunk["id"], "cmpl-" + *r->header("x-request-id"));
    if (!chunk["choices"].empty()) {
      text += chunk["choices"][0]["text"].get<std::string>();
      if (!chunk["choices"][0]["finish_reason"].is_null()) finish = chunk["choices"][0]["finish_reason"];
    }
    if (chunk.contains("usage") && !chunk["usage"].is_null()) usage = chunk["usage"];
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(trim_end(text), reference_continuation());
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(usage["completion_tokens"], 60);
}

TEST_F(HttpE2eTest, OllamaGenerateStreamsNdjsonAndAnswersWhole) {
  const std::string req = R"({"model":"stories260K","prompt":"Once upon a time","options":{"num_predict":60,"temperature":0})";
  auto r = call("POST", "/api/generate", req + "}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(*r->header("content-type"), "application/x-ndjson");
  std::string text;
  json last;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    last = json::parse(line);
    text += last["response"].get<std::string>();
  }
  EXPECT_EQ(trim_end(text), reference_continuation());
  EXPECT_EQ(last["done"], true);
  EXPECT_EQ(last["done_reason"], "length");
  EXPECT_EQ(last["eval_count"], 60);
  EXPECT_EQ(last["prompt_eval_count"], 5);
  EXPECT_GT(last["total_duration"].get<int64_t>(), 0);

  auto whole = call("POST", "/api/generate", req + R"(,"stream":false})");
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const json body = json::parse(whole->body);
  EXPECT_EQ(trim_end(body["response"]), reference_continuation());
  EXPECT_EQ(body["done"], true);
}

TEST_F(HttpE2eTest, ADisconnectMidStreamCancelsTheRequestAtOnce) {
  for (const bool stream : {true, false}) {
    RawHttpClient c;
    ASSERT_TRUE(c.connect_unix(http_path()));
    const std::string body = std::string(R"({"prompt":"Once upon a time","max_tokens":2000,"ignore_eos":true,"stream":)") +
                             (stream ? "true" : "false") + "}";
    ASSERT_TRUE(c.send(http_request("POST", "/v1/completions", body, "x-request-id: http-cancel-" + std::string(stream ? "s" : "n") + "\r\n")));
    const std::string id = std::string("http-cancel-") + (stream ? "s" : "n");
    // Wait until it runs, then hang up.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::optional<proto::StatusAnswer> s;
    while (std::chrono::steady_clock::now() < deadline) {
      s = status_of(id);
      if (s && s->generated_tokens > 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(s && s->generated_tokens > 0) << daemon_->log();
    c.close();
    const auto cancel_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < cancel_deadline) {
      s = status_of(id);
      if (s && s->state == proto::RequestState::kFinished) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(s);
    EXPECT_EQ(s->state, proto::RequestState::kFinished);
    ASSERT_TRUE(s->reason.has_value());
    EXPECT_EQ(*s->reason, FinishReason::kCancelled) << "stream=" << stream;
    EXPECT_LT(s->generated_tokens, 2000);
  }
}

TEST_F(HttpE2eTest, ErrorsAreJsonWithTheRightStatus) {
  struct Case {
    std::string method, path, body;
    int status;
    std::string param;
  };
  const std::vector<Case> cases = {
      {"POST", "/v1/completions", R"({"prompt":"x","max_tokens":"many"})", 400, "max_tokens"},
      {"POST", "/v1/completions", R"({"prompt":"x","temperature":-1})", 400, "temperature"},
      {"POST", "/v1/completions", R"({"prompt":"x","n":17})", 400, "n"},
      {"POST", "/v1/completions", R"({"prompt":"x","best_of":2})", 400, "best_of"},
      {"POST", "/v1/completions", R"({"prompt":"x","logit_bias":{"99999":1}})", 400, ""},
      {"POST", "/v1/completions", R"({"prompt":"x","max_tokens":5000})", 400, "max_tokens"},
      {"POST", "/v1/completions", R"({"model":"gpt-4","prompt":"x"})", 404, "model"},
      {"POST", "/v1/completions", R"({"max_tokens":3})", 400, "prompt"},
      {"POST", "/v1/completions", "[1]", 400, ""},
      {"POST", "/v1/chat/completions", R"({"messages":[]})", 400, "messages"},
      {"POST", "/v1/embeddings", R"({"input":[]})", 400, "input"},
      {"GET", "/v1/completions", "", 405, ""},
      {"GET", "/v1/nothing", "", 404, ""},
  };
  for (const Case& k : cases) {
    auto r = call(k.method, k.path, k.body);
    ASSERT_TRUE(r) << k.path << " " << k.body;
    EXPECT_EQ(r->status, k.status) << k.body << " -> " << r->body;
    const json body = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << r->body;
    EXPECT_TRUE(body["error"]["message"].is_string()) << r->body;
    EXPECT_TRUE(body["error"]["type"].is_string()) << r->body;
    if (!k.param.empty()) {
      EXPECT_EQ(body["error"]["param"], k.param) << r->body;
    }
    EXPECT_NE(r->header("x-request-id"), nullptr);
  }
  // Ollama's shape: {"error": "..."}.
  for (const auto& [path, body, status] : std::vector<std::tuple<std::string, std::string, int>>{
           {"/api/generate", R"({"model":"nope","prompt":"x"})", 404},
           {"/api/generate", R"({"model":"stories260K","prompt":"x","options":{"temperature":"hot"}})", 400},
           {"/api/chat", R"({"model":"stories260K","messages":"x"})", 400},
           {"/api/show", R"({"model":"nope"})", 404}}) {
    auto r = call("POST", path, body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << body << " -> " << r->body;
    const json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r->body;
    EXPECT_TRUE(j["error"].is_string()) << r->body;
  }
}

TEST_F(HttpE2eTest, ModelsHealthAndMetrics) {
  auto models = call("GET", "/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "stories260K");
  auto tags = call("GET", "/api/tags");
  ASSERT_TRUE(tags);
  EXPECT_EQ(json::parse(tags->body)["models"][0]["name"], "stories260K:latest");
  // stories260K has no general.file_type: its matrices' type.
  EXPECT_EQ(json::parse(tags->body)["models"][0]["details"]["quantization_level"], "F32");
  auto version = call("GET", "/api/version");
  ASSERT_TRUE(version);
  EXPECT_TRUE(json::parse(version->body)["version"].is_string());
  auto health = call("GET", "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  // vkstream_itl_seconds is cumulative: a 10-token request adds 9 gaps; no bucket goes down.
  auto scrape = [&] {
    auto m = call("GET", "/metrics");
    EXPECT_TRUE(m && m->status == 200);
    std::map<std::string, double> values;
    std::istringstream lines(m ? m->body : "");
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("vkstream_itl_seconds", 0) != 0) continue;
      const size_t space = line.rfind(' ');
      values[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
    return values;
  };
  const auto before = scrape();
  ASSERT_TRUE(before.count("vkstream_itl_seconds_count"));
  auto r = call("POST", "/v1/completions", R"({"prompt":"Once upon a time","max_tokens":10,"temperature":0,"ignore_eos":true})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  const auto after = scrape();
  EXPECT_GE(after.at("vkstream_itl_seconds_count") - before.at("vkstream_itl_seconds_count"), 9);
  for (const auto& [name, value] : before) EXPECT_GE(after.at(name), value) << name;
}

TEST_F(HttpE2eTest, MutatedBodiesAreAnsweredWithJsonAndOthersAreUnaffected) {
  std::mt19937 rng(11);
  const json base = json::parse(kGreedy60 + R"(,"top_p":0.9,"stop":["\n"],"seed":3,"logit_bias":{"5":1},"stream":false})");
  const std::vector<json> odd_values = {nullptr, true, -1, 1e300, "str", json::array(), json::object(), 3.5, -99999999999LL};
  int errors = 0;
  for (int i = 0; i < 150; ++i) {
    json body = base;
    auto it = body.begin();
    std::advance(it, static_cast<long>(rng() % body.size()));
    body[it.key()] = odd_values[rng() % odd_values.size()];
    body["max_tokens"] = body["max_tokens"].is_number_integer() ? json(2) : body["max_tokens"];
    if (body["stream"].is_boolean()) body["stream"] = false;  // one JSON answer to check
    auto r = call("POST", "/v1/completions", body.dump());
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
  EXPECT_GT(errors, 30);
  auto ok = call("POST", "/v1/completions", kGreedy60 + "}");
  ASSERT_TRUE(ok);
  EXPECT_EQ(trim_end(json::parse(ok->body)["choices"][0]["text"]), reference_continuation());
}

TEST_F(HttpE2eTest, ResponseFormatAndOllamaFormatConstrainTheOutputToJson) {
  auto check = [](const std::string& text, const std::string& finish, const std::string& what) {
    size_t start = text.find_first_not_of(" \n\t");
    ASSERT_NE(start, std::string::npos) << what << ": empty output";
    EXPECT_EQ(text[start], '{') << what << ": " << text;
    if (finish == "stop") {
      const json parsed = json::parse(text, nullptr, false);
      EXPECT_TRUE(parsed.is_object()) << what << ": " << text;
    }
  };
  auto r = call("POST", "/v1/completions",
                R"({"prompt":"Once upon a time","max_tokens":120,"temperature":0,"response_format":{"type":"json_object"}})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json a = json::parse(r->body);
  check(a["choices"][0]["text"], a["choices"][0]["finish_reason"], "response_format json_object");
  auto s = call("POST", "/v1/completions",
                R"({"prompt":"x","max_tokens":60,"temperature":0,"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}}})");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200) << s->body;
  const json b = json::parse(s->body);
  const std::string text = b["choices"][0]["text"];
  check(text, b["choices"][0]["finish_reason"], "json_schema");
  if (b["choices"][0]["finish_reason"] == "stop") {
    EXPECT_TRUE(json::parse(text)["n"].is_number_integer()) << text;
  }
  auto bad = call("POST", "/v1/completions", R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","not":{}}}}})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "response_format") << bad->body;
  auto o = call("POST", "/api/generate", R"({"model":"stories260K","prompt":"Once upon a time","format":"json","stream":false,"options":{"num_predict":120,"temperature":0}})");
  ASSERT_TRUE(o);
  ASSERT_EQ(o->status, 200) << o->body;
  const json c = json::parse(o->body);
  check(c["response"], c["done_reason"], "ollama format json");
}

TEST_F(HttpE2eTest, ALongPromptIsTokenizedOffTheLoopAndServed) {
  std::string prompt;
  while (prompt.size() < 4000) prompt += "Once upon a time there was a little girl. ";
  auto r = call("POST", "/v1/completions", json{{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  EXPECT_GT(body["usage"]["prompt_tokens"].get<int>(), 500);
  EXPECT_EQ(body["usage"]["completion_tokens"], 4);
}

TEST(HttpE2eStartup, NonLoopbackWithoutApiKeyRefusesToStart) {
  TempDir dir;
  DaemonProcess d;
  DaemonConfig config;
  config.dir = dir.path;
  config.extra_args = {"--cpu", "--http", "0.0.0.0:0"};
  d.start(config);
  const int rc = d.wait_exit(60);
  EXPECT_NE(rc, 0);
  EXPECT_NE(d.log().find("--api-key"), std::string::npos) << d.log();
}

// Starts `d` on the CPU serving HTTP on the Unix socket dir/http.sock, with `flags` added; returns
// that socket's path (the caller waits for the daemon to be ready).
std::string start_http_daemon(DaemonProcess& d, const TempDir& dir, const std::vector<std::string>& flags) {
  DaemonConfig config;
  config.dir = dir.path;
  const std::string sock = dir.path + "/http.sock";
  config.extra_args = {"--cpu", "--http", "unix:" + sock};
  config.extra_args.insert(config.extra_args.end(), flags.begin(), flags.end());
  d.start(config);
  return sock;
}

// The request field `speculative` over HTTP, on a daemon that speculates (prompt lookup, every
// draft verified): false turns it off for that request (no draft counted), true or a draft length
// keeps it on, with the same text; a value out of range is a 400 naming the field.
TEST(HttpE2eStartup, SpeculativeFieldTurnsSpeculationOffPerRequest) {
  TempDir dir;
  DaemonProcess d;
  const std::string sock = start_http_daemon(d, dir, {"--speculative", "ngram", "--draft-always"});
  ASSERT_TRUE(d.wait_ready(60)) << d.log();
  auto post = [&](const std::string& speculative) {
    RawHttpClient c;
    EXPECT_TRUE(c.connect_unix(sock));
    const std::string body = R"({"model":"stories260K","prompt":"Tom had a red ball. Tom had a red ball. Tom had",)"
                             R"("max_tokens":40,"temperature":0,"ignore_eos":true,"speculative":)" + speculative + "}";
    c.send(http_request("POST", "/v1/completions", body));
    return c.read_response(30000);
  };
  auto drafted = [&] { return scrape_metric(sock, "vkstream_draft_tokens_total"); };
  const auto off = post("false");
  ASSERT_TRUE(off);
  ASSERT_EQ(off->status, 200) << off->body;
  EXPECT_EQ(drafted(), 0.0) << "speculative: false still drafted";
  const auto on = post("true");
  ASSERT_TRUE(on);
  ASSERT_EQ(on->status, 200) << on->body;
  const double after_on = drafted();
  EXPECT_GT(after_on, 0) << "the repeated prompt drew no draft";
  const auto three = post("3");
  ASSERT_TRUE(three);
  ASSERT_EQ(three->status, 200) << three->body;
  EXPECT_GT(drafted(), after_on);
  const auto text = [](const RawResponse& r) { return json::parse(r.body)["choices"][0]["text"].get<std::string>(); };
  EXPECT_EQ(text(*on), text(*off));
  EXPECT_EQ(text(*three), text(*off));
  const auto bad = post("99");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "speculative") << bad->body;
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(20), 0) << d.log();
}

TEST(HttpE2eStartup, ApiKeyIsRequiredAsBearer) {
  TempDir dir;
  DaemonProcess d;
  const std::string sock = start_http_daemon(d, dir, {"--api-key", "sesame"});
  ASSERT_TRUE(d.wait_ready(60)) << d.log();
  auto get = [&](const std::string& headers) {
    RawHttpClient c;
    EXPECT_TRUE(c.connect_unix(sock));
    c.send(http_request("GET", "/v1/models", {}, headers));
    return c.read_response(10000);
  };
  auto none = get("");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(get("Authorization: Bearer wrong\r\n")->status, 401);
  EXPECT_EQ(get("Authorization: Bearer sesame\r\n")->status, 200);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(20), 0) << d.log();
}

TEST(HttpE2eStartup, AFullQueueIs429WithRetryAfter) {
  TempDir dir;
  DaemonProcess d;
  const std::string sock = start_http_daemon(d, dir, {"--max-seqs", "1", "--max-queued", "1"});
  ASSERT_TRUE(d.wait_ready(60)) << d.log();
  const std::string long_stream = R"({"prompt":"Once upon a time","max_tokens":2000,"ignore_eos":true,"stream":true})";
  std::vector<RawHttpClient> held(2);
  for (auto& c : held) {  // one running, one waiting
    ASSERT_TRUE(c.connect_unix(sock));
    ASSERT_TRUE(c.send(http_request("POST", "/v1/completions", long_stream)));
  }
  std::optional<RawResponse> r;
  for (int i = 0; i < 100; ++i) {  // until the engine has queued both
    RawHttpClient c;
    ASSERT_TRUE(c.connect_unix(sock));
    ASSERT_TRUE(c.send(http_request("POST", "/v1/completions", long_stream)));
    r = c.read_response(10000);
    if (r && r->status == 429) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  ASSERT_NE(r->header("retry-after"), nullptr);
  EXPECT_GE(std::stoi(*r->header("retry-after")), 1);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "overloaded");
  held.clear();
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(20), 0) << d.log();
}

TEST(HttpE2eStartup, ASlowSseReaderIsClosedAndItsRequestCancelled) {
  TempDir dir;
  DaemonProcess d;
  const std::string sock = start_http_daemon(d, dir, {"--max-output-bytes", "65536"});
  ASSERT_TRUE(d.wait_ready(60)) << d.log();
  RawHttpClient slow;
  ASSERT_TRUE(slow.connect_unix(sock));
  int small = 4096;
  setsockopt(slow.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  // 2000 tokens with 20 alternatives each: megabytes of SSE that this client never reads.
  ASSERT_TRUE(slow.send(http_request("POST", "/v1/completions",
                                     R"({"prompt":"Once upon a time","max_tokens":2000,"ignore_eos":true,"stream":true,"logprobs":20})",
                                     "x-request-id: slow-reader\r\n")));
  std::optional<proto::StatusAnswer> s;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    UdsClient u;
    ASSERT_TRUE(u.connect(d.socket_path()));
    auto m = request(u, simple(proto::StatusRequest{"slow-reader"}, 1));
    if (m) {
      if (const auto* st = std::get_if<proto::StatusAnswer>(&m->body)) s = *st;
    }
    if (s && s->state == proto::RequestState::kFinished) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(s) << d.log();
  EXPECT_EQ(s->state, proto::RequestState::kFinished);
  ASSERT_TRUE(s->reason.has_value());
  EXPECT_EQ(*s->reason, FinishReason::kCancelled) << d.log();
  EXPECT_LT(s->generated_tokens, 2000);
  EXPECT_NE(d.log().find("slow reader"), std::string::npos);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(20), 0) << d.log();
}

TEST(HttpE2eStartup, SocketActivatedHttpDescriptorIsServed) {
  if (access("/usr/bin/systemd-socket-activate", X_OK) != 0) GTEST_SKIP() << "systemd-socket-activate is not installed";
  TempDir dir;
  const std::string sock = dir.path + "/http.sock";
  const std::string log = dir.path + "/log";
  const std::string fifo = held_load_fifo(dir.path);
  ASSERT_FALSE(fifo.empty());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen(log.c_str(), "w", stderr);
    const std::string daemon = daemon_binary();
    const std::string model = stories_model();
    const std::vector<std::string> args = {
        "/usr/bin/systemd-socket-activate", "-l", dir.path + "/vkstream.sock", "-l", dir.path + "/router.zmq",
        "-l", dir.path + "/pub.zmq", "-l", sock, "--fdname=uds:router:pub:http", daemon, "--model", model, "--cpu",
        "--chat-template", fifo};
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  // While the model loads the activated socket answers 503 "loading" (server/http_loading.h),
  // then the front end serves it: the same socket, never closed in between.
  std::optional<RawResponse> r;
  int loading = 0;
  bool released = false;
  for (int i = 0; i < 600 && !(r && r->status != 503); ++i) {
    RawHttpClient c;
    r.reset();
    if (c.connect_unix(sock) && c.send(http_request("GET", "/health"))) r = c.read_response(20000);
    if (r && r->status == 503 && json::parse(r->body, nullptr, false) == json({{"status", "loading"}})) ++loading;
    if (loading >= 2 && !released) {
      released = release_held_load(fifo, [pid] { return waitpid(pid, nullptr, WNOHANG) == 0; });  // (a zombie: not alive)
      if (!released) break;  // the daemon is gone or never read the template: reported below
    }
    if (!r || r->status == 503) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  ASSERT_TRUE(r) << ss.str();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["status"], "ok");
  EXPECT_GE(loading, 2) << ss.str();
  EXPECT_TRUE(released) << ss.str();
}

}  // namespace
}  // namespace vks::test
