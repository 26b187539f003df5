// Issue 37: a long prefill sent nothing until its first token, so a client timing silence (the
// CLI's --timeout) took it for a hung daemon. A prompt read in several steps now reports its
// progress: on the request's connection and its PUB topic, not numbered and not kept for replay;
// HTTP streams do not carry it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <zmq.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <variant>

#include "tests/http/http_test_client.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

std::string long_prompt() {
  std::string p;
  for (int i = 0; i < 12; ++i) p += "Once upon a time, there was a little girl. ";
  return p;
}

proto::Request long_greedy_request(int64_t tag) {
  proto::GenerateRequest g;
  g.prompt = long_prompt();
  g.add_bos = true;
  g.temperature = 0.0;
  g.max_tokens = 8;
  return simple(std::move(g), tag);
}

// The text of a streamed /v1/completions answer; fails the test on any data line that is not a
// completion chunk (a progress event leaking into the stream would be one).
std::string sse_completion_text(const std::string& body) {
  std::string text;
  bool done = false;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    EXPECT_EQ(line.rfind("data: ", 0), 0u) << line;
    EXPECT_FALSE(done) << "data after [DONE]: " << line;
    if (line == "data: [DONE]") {
      done = true;
      continue;
    }
    const nlohmann::json chunk = nlohmann::json::parse(line.substr(6), nullptr, false);
    EXPECT_EQ(chunk.value("object", ""), "text_completion") << line;
    if (chunk.contains("choices") && !chunk["choices"].empty()) text += chunk["choices"][0].value("text", "");
  }
  EXPECT_TRUE(done) << body;
  return text;
}

std::vector<int32_t> progress_counts(const StreamCollector& s) {
  std::vector<int32_t> done;
  for (const proto::StreamEvent& e : s.progress) done.push_back(e.prompt_tokens_done);
  return done;
}

TEST(ServerProgress, ALongPromptReportsItsProgressLiveAndKeepsItsSeqs) {
  TempDir dir;
  DaemonConfig config;
  config.dir = dir.path;
  // 8 tokens a step and a progress event after each: a ~160-token prompt reports 20 times, every
  // time it is sent (no prefix cache). One CPU thread (--threads reaches the runner: its log says so).
  config.extra_args = {"--cpu", "--threads", "1", "--max-batched-tokens", "8", "--progress-interval", "0", "--no-prefix-cache",
                       "--http", "unix:" + dir.path + "/http.sock"};
  DaemonProcess daemon;
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(60)) << daemon.log();
  void* zmq = zmq_ctx_new();
  {
    ZmqSubscriber firehose(zmq);
    ASSERT_TRUE(firehose.connect(daemon.pub_endpoint()));
    firehose.subscribe("vks.");

    UdsClient c;
    ASSERT_TRUE(c.connect(daemon.socket_path()));
    ASSERT_TRUE(wait_for_subscriptions(c, 1)) << daemon.log();  // the firehose sees every event from here
    const auto accepted = request(c, long_greedy_request(3));
    ASSERT_TRUE(accepted);
    const auto* a = std::get_if<proto::AcceptedAnswer>(&accepted->body);
    ASSERT_NE(a, nullptr);
    ASSERT_GT(a->prompt_tokens, 80);
    StreamCollector on_connection{a->id};
    ASSERT_TRUE(collect(c, on_connection, 30000)) << daemon.log();
    EXPECT_NE(daemon.log().find("the CPU backend runs 1 thread (--threads)"), std::string::npos) << daemon.log();
    EXPECT_TRUE(on_connection.arrived_in_order);  // progress took no seq: no gap, no duplicate
    EXPECT_FALSE(on_connection.ids().empty());

    // Counts grow by the step's 8 tokens and end at the prompt's length, before the first token.
    const std::vector<int32_t> done = progress_counts(on_connection);
    ASSERT_GE(done.size(), 10u);
    for (size_t i = 1; i < done.size(); ++i) EXPECT_GT(done[i], done[i - 1]) << i;
    EXPECT_EQ(done.back(), a->prompt_tokens);
    for (const proto::StreamEvent& e : on_connection.progress) {
      EXPECT_EQ(e.usage.prompt_tokens, a->prompt_tokens);
      EXPECT_EQ(e.usage.cached_tokens, 0);
    }

    // The PUB topic got the same, live.
    StreamCollector on_topic{a->id};
    ASSERT_TRUE(collect(firehose, on_topic, 10000));
    EXPECT_EQ(progress_counts(on_topic), done);
    EXPECT_EQ(on_topic.ids(), on_connection.ids());

    // Not stored: replay has the numbered events only, exactly those the connection got.
    const auto rp = request(c, simple(proto::ReplayRequest{a->id, 0}, 4));
    ASSERT_TRUE(rp);
    const auto* replay = std::get_if<proto::ReplayAnswer>(&rp->body);
    ASSERT_NE(replay, nullptr);
    ASSERT_EQ(static_cast<int64_t>(replay->events.size()), on_connection.last_seq + 1);
    for (const proto::StreamEvent& e : replay->events) EXPECT_NE(e.type, proto::StreamEventType::kProgress);

    // Progress changes no token: the same prompt again agrees, and reports the same.
    const auto again = request(c, long_greedy_request(5));
    ASSERT_TRUE(again);
    const auto* b = std::get_if<proto::AcceptedAnswer>(&again->body);
    ASSERT_NE(b, nullptr);
    StreamCollector second{b->id};
    ASSERT_TRUE(collect(c, second, 30000));
    EXPECT_EQ(second.ids(), on_connection.ids());
    EXPECT_EQ(progress_counts(second), done);

    // HTTP streams carry no progress: a streamed completion of the same prompt, read in the same
    // 20 steps, is the same text in plain chunks.
    RawHttpClient http;
    ASSERT_TRUE(http.connect_unix(dir.path + "/http.sock"));
    const nlohmann::json body = {{"prompt", long_prompt()}, {"max_tokens", 8}, {"temperature", 0}, {"stream", true}};
    ASSERT_TRUE(http.send(http_request("POST", "/v1/completions", body.dump())));
    const std::optional<RawResponse> r = http.read_response(30000);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(sse_completion_text(r->body), on_connection.text());
  }
  zmq_ctx_term(zmq);
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

}  // namespace
}  // namespace vks::test
