// End to end: OpenAI's n > 1 on POST /v1/completions and POST /v1/chat/completions against the real
// vkstreamd (CPU reference, stories260K; chat through its ChatML fallback): greedy choices equal each
// other and the n = 1 answer, and later choices reuse choice 0's prompt blocks from the prefix cache;
// seeded sampled choices differ from each other, choice 0 is the n = 1 answer of that seed, and the
// whole answer is reproducible; streamed deltas per index reassemble to the non-streamed choices
// (one role delta and one finish_reason per index, one id, [DONE] once at the end, usage last);
// usage counts the prompt once and every choice's completion tokens; n out of range is a 400 naming
// n; a choice that fails fails the whole answer (and cancels the others); a hang-up cancels every choice.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "tests/http/http_daemon_suite.h"
#include "tests/http/http_test_client.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

using nlohmann::json;

class HttpChoicesE2eTest : public HttpDaemonSuite {
 protected:
  // 3 requests per connection: a 4th choice is refused (a failing choice, on demand).
  static void SetUpTestSuite() { start_daemon({"--max-requests-per-connection", "3"}); }

  // The answer of a request that must succeed (200).
  static json answer(const std::string& path, const json& body) {
    auto r = call(path, body);
    EXPECT_TRUE(r) << daemon_->log();
    if (!r) return json::object();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body, nullptr, false);
  }
  // One counter or gauge of GET /metrics (-1 when it is missing).
  static double metric(const std::string& name) { return scrape_metric(http_path(), name); }
};

// A prompt no earlier test sent: the prefix cache holds nothing of it yet.
std::string fresh_story(const std::string& tag) {
  static std::mt19937 rng(std::random_device{}());
  return "Once upon a time (" + tag + " " + std::to_string(rng()) +
         ") there was a little girl named Lily. She liked to play in the park with her dog.";
}

// base with patch's fields set.
json with(json base, const json& patch) {
  base.merge_patch(patch);
  return base;
}

json chat_messages(const std::string& text) { return json::array({{{"role", "user"}, {"content", text}}}); }

// The text of choice i of a whole answer (completions' text, chat's message.content).
std::string choice_text(const json& answer, size_t i) {
  const json& c = answer["choices"][i];
  return c.contains("message") ? c["message"]["content"].get<std::string>() : c["text"].get<std::string>();
}

void expect_indices_in_order(const json& answer, int n) {
  ASSERT_EQ(answer["choices"].size(), static_cast<size_t>(n)) << answer.dump();
  for (int i = 0; i < n; ++i) EXPECT_EQ(answer["choices"][i]["index"], i);
}

TEST_F(HttpChoicesE2eTest, GreedyChoicesEqualEachOtherAndTheSingleAnswerAndShareThePromptBlocks) {
  const std::string prompt = fresh_story("greedy");
  const json body = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}};
  const double hits_before = metric("vkstream_prefix_cache_hit_tokens_total");
  const double queried_before = metric("vkstream_prefix_cache_query_tokens_total");
  const json three = answer("/v1/completions", with(body, {{"n", 3}}));
  const double hits = metric("vkstream_prefix_cache_hit_tokens_total") - hits_before;
  const double queried = metric("vkstream_prefix_cache_query_tokens_total") - queried_before;
  const json one = answer("/v1/completions", body);  // the prompt again: what of it the cache holds
  expect_indices_in_order(three, 3);
  ASSERT_EQ(one["choices"].size(), 1u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(choice_text(three, i), choice_text(one, 0)) << i;
    EXPECT_EQ(three["choices"][i]["finish_reason"], one["choices"][0]["finish_reason"]) << i;
  }
  // usage: the prompt once, every choice's tokens.
  const int64_t prompt_tokens = one["usage"]["prompt_tokens"];
  const int64_t single = one["usage"]["completion_tokens"];
  EXPECT_EQ(three["usage"]["prompt_tokens"], prompt_tokens);
  EXPECT_EQ(three["usage"]["completion_tokens"], 3 * single);
  EXPECT_EQ(three["usage"]["total_tokens"], prompt_tokens + 3 * single);
  // Choices 1 and 2 found choice 0's full prompt blocks: exactly what the repeated prompt finds.
  const int64_t cached = one["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GT(cached, 0);
  EXPECT_EQ(queried, 3.0 * static_cast<double>(prompt_tokens));
  EXPECT_EQ(hits, 2.0 * static_cast<double>(cached));

  // Chat: the same on the chat surface, with logprobs per choice; the conversation is rendered once
  // for the three choices (they take choice 0's prompt ids), and once more for the single answer.
  const json chat_body = {{"messages", chat_messages(fresh_story("greedy chat"))}, {"max_tokens", 10}, {"temperature", 0},
                          {"logprobs", true}};
  const double renders_before = metric("vkstream_chat_renders_total");
  const json chat_three = answer("/v1/chat/completions", with(chat_body, {{"n", 3}}));
  EXPECT_EQ(metric("vkstream_chat_renders_total") - renders_before, 1.0);
  const json chat_one = answer("/v1/chat/completions", chat_body);
  EXPECT_EQ(metric("vkstream_chat_renders_total") - renders_before, 2.0);
  EXPECT_EQ(chat_three["usage"]["prompt_tokens"], chat_one["usage"]["prompt_tokens"]);
  expect_indices_in_order(chat_three, 3);
  EXPECT_EQ(chat_three["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(choice_text(chat_three, i), choice_text(chat_one, 0)) << i;
    EXPECT_EQ(chat_three["choices"][i]["logprobs"], chat_one["choices"][0]["logprobs"]) << i;
  }
  EXPECT_EQ(chat_three["usage"]["completion_tokens"], 3 * chat_one["usage"]["completion_tokens"].get<int64_t>());
}

TEST_F(HttpChoicesE2eTest, SeededChoicesDifferAndTheAnswerIsReproducible) {
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 1.0}, {"seed", 1234}, {"logprobs", 0}};
  const json first = answer("/v1/completions", with(body, {{"n", 3}}));
  const json again = answer("/v1/completions", with(body, {{"n", 3}}));
  const json single = answer("/v1/completions", body);
  expect_indices_in_order(first, 3);
  std::set<std::string> texts;
  for (size_t i = 0; i < 3; ++i) {
    texts.insert(choice_text(first, i));
    EXPECT_EQ(choice_text(again, i), choice_text(first, i)) << i;
  }
  EXPECT_EQ(texts.size(), 3u) << first.dump();
  EXPECT_EQ(choice_text(first, 0), choice_text(single, 0));  // choice 0 is the request as sent
  // Each choice has its own logprobs; usage adds up every choice's tokens.
  size_t completion = 0;
  for (size_t i = 0; i < 3; ++i) completion += first["choices"][i]["logprobs"]["tokens"].size();
  EXPECT_EQ(first["usage"]["completion_tokens"], completion);
  EXPECT_EQ(first["usage"]["prompt_tokens"], single["usage"]["prompt_tokens"]);
}

// The chunks of an SSE body; fails the test on data after [DONE] or a missing [DONE].
std::vector<json> sse(const std::string& body) {
  std::vector<json> chunks;
  bool done = false;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    EXPECT_EQ(line.rfind("data: ", 0), 0u) << line;
    EXPECT_FALSE(done) << "data after [DONE]";
    if (line == "data: [DONE]") {
      done = true;
      continue;
    }
    chunks.push_back(json::parse(line.substr(6)));
  }
  EXPECT_TRUE(done) << body;
  return chunks;
}

// Streamed deltas per index, put together: text, finish_reason, and how many role deltas and
// finish chunks each index had.
struct Reassembled {
  std::map<int, std::string> text;
  std::map<int, std::string> finish;
  std::map<int, int> roles;
  std::map<int, int> finishes;
  std::set<std::string> ids;
  json usage;
};

Reassembled reassemble(const std::vector<json>& chunks) {
  Reassembled r;
  for (const json& chunk : chunks) {
    r.ids.insert(chunk["id"].get<std::string>());
    if (chunk.contains("usage") && !chunk["usage"].is_null()) {
      EXPECT_TRUE(r.usage.is_null()) << "two usage chunks";
      EXPECT_TRUE(chunk["choices"].empty());
      r.usage = chunk["usage"];
      continue;
    }
    EXPECT_TRUE(r.usage.is_null()) << "a chunk after the usage chunk";
    for (const json& c : chunk["choices"]) {
      const int i = c["index"];
      if (c.contains("delta")) {
        if (c["delta"].contains("role")) ++r.roles[i];
        if (c["delta"].contains("content") && c["delta"]["content"].is_string()) r.text[i] += c["delta"]["content"].get<std::string>();
      } else {
        r.text[i] += c["text"].get<std::string>();
      }
      if (!c["finish_reason"].is_null()) {
        ++r.finishes[i];
        r.finish[i] = c["finish_reason"];
      }
    }
  }
  return r;
}

TEST_F(HttpChoicesE2eTest, StreamedChoicesReassembleToTheWholeAnswer) {
  const std::vector<std::pair<std::string, json>> cases = {
      {"/v1/completions", {{"prompt", "Lily and her dog"}}},
      {"/v1/chat/completions", {{"messages", chat_messages("Tell me about Lily and her dog.")}}},
  };
  for (const auto& [path, base] : cases) {
    SCOPED_TRACE(path);
    const json body = with(base, {{"n", 3}, {"max_tokens", 20}, {"temperature", 0.8}, {"seed", 77}});
    const json whole = answer(path, body);
    auto r = call(path, with(body, {{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const Reassembled s = reassemble(sse(r->body));
    ASSERT_EQ(s.ids.size(), 1u) << "one answer id";
    ASSERT_NE(r->header("x-request-id"), nullptr);
    EXPECT_NE(s.ids.begin()->find(*r->header("x-request-id")), std::string::npos);
    expect_indices_in_order(whole, 3);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(s.text.at(i), choice_text(whole, static_cast<size_t>(i))) << i;
      EXPECT_EQ(s.finish.at(i), whole["choices"][i]["finish_reason"]) << i;
      EXPECT_EQ(s.finishes.at(i), 1) << i;
      if (path == "/v1/chat/completions") {
        EXPECT_EQ(s.roles.at(i), 1) << i;
      }
    }
    EXPECT_EQ(s.text.size(), 3u);
    ASSERT_TRUE(s.usage.is_object());
    EXPECT_EQ(s.usage["prompt_tokens"], whole["usage"]["prompt_tokens"]);
    EXPECT_EQ(s.usage["completion_tokens"], whole["usage"]["completion_tokens"]);
  }
}

TEST_F(HttpChoicesE2eTest, NOutOfRangeIs400NamingN) {
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    for (const json& n : {json(0), json(17), json(2.5), json("3"), json(-1)}) {
      SCOPED_TRACE(std::string(path) + " n=" + n.dump());
      const json body = {{"prompt", "x"}, {"messages", chat_messages("x")}, {"n", n}, {"max_tokens", 2}};
      auto r = call(path, body);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 400) << r->body;
      const json e = json::parse(r->body, nullptr, false);
      EXPECT_EQ(e["error"]["type"], "invalid_request_error") << r->body;
      EXPECT_EQ(e["error"]["param"], "n") << r->body;
      EXPECT_NE(e["error"]["message"].get<std::string>().find("1..16"), std::string::npos) << r->body;
    }
  }
}

TEST_F(HttpChoicesE2eTest, AChoiceRefusedFailsTheWholeAnswerAndCancelsTheOthers) {
  const double generated_before = metric("vkstream_generated_tokens_total");
  const json body = {{"prompt", "Once upon a time"}, {"n", 4}, {"max_tokens", 1500}, {"ignore_eos", true}, {"temperature", 0}};
  auto whole = call("/v1/completions", body);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->status, 429) << whole->body;
  const json e = json::parse(whole->body, nullptr, false);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("choice 3"), std::string::npos) << whole->body;
  EXPECT_NE(e["error"]["message"].get<std::string>().find("max_requests_per_connection"), std::string::npos) << whole->body;

  auto streamed = call("/v1/completions", with(body, {{"stream", true}}));
  ASSERT_TRUE(streamed);
  EXPECT_EQ(streamed->status, 200);
  const std::vector<json> chunks = sse(streamed->body);
  ASSERT_FALSE(chunks.empty());
  ASSERT_TRUE(chunks.back().contains("error")) << streamed->body.substr(0, 2000);
  EXPECT_NE(chunks.back()["error"]["message"].get<std::string>().find("choice 3"), std::string::npos);
  // The choices that were running are cancelled (the connection closed after the error): none runs
  // to its 1500 tokens.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline && metric("vkstream_requests_running") != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(metric("vkstream_requests_running"), 0);
  EXPECT_LT(metric("vkstream_generated_tokens_total") - generated_before, 2 * 3 * 1500.0);
  // And the server goes on answering.
  EXPECT_EQ(answer("/v1/completions", with(body, {{"n", 3}, {"max_tokens", 4}}))["choices"].size(), 3u);
}

TEST_F(HttpChoicesE2eTest, AHangUpCancelsEveryChoice) {
  const double submitted_before = metric("vkstream_requests_total");
  const double generated_before = metric("vkstream_generated_tokens_total");
  RawHttpClient c;
  ASSERT_TRUE(c.connect_unix(http_path()));
  constexpr int kMaxTokens = 1500;
  const json body = {{"prompt", "Once upon a time"}, {"n", 3}, {"max_tokens", kMaxTokens}, {"ignore_eos", true},
                     {"temperature", 0}, {"stream", true}};
  ASSERT_TRUE(c.send(http_request("POST", "/v1/completions", body.dump())));
  // Wait until every choice streams (all three were submitted), then hang up.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string seen;
  while (std::chrono::steady_clock::now() < deadline && seen.find("\"index\":2") == std::string::npos) {
    seen += c.read_until_close(20);
  }
  ASSERT_NE(seen.find("\"index\":2"), std::string::npos) << seen.substr(0, 2000);
  c.close();
  const auto idle_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < idle_deadline &&
         (metric("vkstream_requests_running") != 0 || metric("vkstream_requests_waiting") != 0)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(metric("vkstream_requests_running"), 0);
  EXPECT_EQ(metric("vkstream_requests_total") - submitted_before, 3);
  EXPECT_LT(metric("vkstream_generated_tokens_total") - generated_before, 3.0 * kMaxTokens);
}

}  // namespace
}  // namespace vks::test
