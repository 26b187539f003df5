// Issue 37: a long prefill sent nothing until its first token, so a client timing silence (the
// CLI's --timeout) took it for a hung daemon. A prompt read in several steps now reports its
// progress: on the request's connection and its PUB topic, not numbered and not kept for replay.
#include <gtest/gtest.h>
#include <signal.h>
#include <zmq.h>

#include <chrono>
#include <string>
#include <thread>
#include <variant>

#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

proto::Request long_greedy_request(int64_t tag) {
  proto::GenerateRequest g;
  for (int i = 0; i < 12; ++i) g.prompt += "Once upon a time, there was a little girl. ";
  g.add_bos = true;
  g.temperature = 0.0;
  g.max_tokens = 8;
  g.ignore_eos = true;
  return simple(std::move(g), tag);
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
  // 8 tokens a step and a progress event after each: a ~100-token prompt reports a dozen times.
  config.extra_args = {"--cpu", "--max-batched-tokens", "8", "--progress-interval", "0"};
  DaemonProcess daemon;
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(60)) << daemon.log();
  void* zmq = zmq_ctx_new();
  {
    ZmqSubscriber firehose(zmq);
    ASSERT_TRUE(firehose.connect(daemon.pub_endpoint()));
    firehose.subscribe("vks.");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the subscription reaches the daemon

    UdsClient c;
    ASSERT_TRUE(c.connect(daemon.socket_path()));
    const auto accepted = request(c, long_greedy_request(3));
    ASSERT_TRUE(accepted);
    const auto* a = std::get_if<proto::AcceptedAnswer>(&accepted->body);
    ASSERT_NE(a, nullptr);
    ASSERT_GT(a->prompt_tokens, 80);
    StreamCollector on_connection{a->id};
    ASSERT_TRUE(collect(c, on_connection, 30000)) << daemon.log();
    EXPECT_TRUE(on_connection.arrived_in_order);  // progress took no seq: no gap, no duplicate
    EXPECT_EQ(on_connection.ids().size(), 8u);

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

    // Progress changes no token: the same prompt again (its start from the prefix cache) agrees.
    const auto again = request(c, long_greedy_request(5));
    ASSERT_TRUE(again);
    const auto* b = std::get_if<proto::AcceptedAnswer>(&again->body);
    ASSERT_NE(b, nullptr);
    StreamCollector second{b->id};
    ASSERT_TRUE(collect(c, second, 30000));
    EXPECT_EQ(second.ids(), on_connection.ids());
  }
  zmq_ctx_term(zmq);
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

}  // namespace
}  // namespace vks::test
