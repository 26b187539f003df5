// Issue 14, fault 4: a subscriber that joins a request's topic mid-stream while the daemon is busy
// with many concurrent streams gets the catch-up from seq 0 before any live event, and no
// duplicates (docs/PROTOCOL.md 2.3 and 7).
#include <gtest/gtest.h>
#include <signal.h>
#include <zmq.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

TEST(ServerLateSubscriberTest, CatchUpComesBeforeLiveEventsWithoutDuplicates) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.extra_args = {"--max-seqs", "48"};
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(40)) << daemon.log();

  constexpr int kStreams = 48;
  UdsClient owner;
  ASSERT_TRUE(owner.connect(daemon.socket_path()));
  for (int i = 0; i < kStreams; ++i) {
    proto::Request req = greedy_request(150, true);
    std::get<proto::GenerateRequest>(req.body).id = "late-" + std::to_string(i);
    std::get<proto::GenerateRequest>(req.body).logprobs = 8;  // bigger events: a busier loop
    req.tag = proto::Tag::of(i + 1);
    ASSERT_TRUE(owner.send(req));
  }
  // The owner keeps reading (it must not become a slow consumer).
  std::atomic<bool> stop_owner{false};
  std::thread owner_reader([&] {
    while (!stop_owner && !owner.closed()) owner.recv_frame(50);
  });

  void* ctx = zmq_ctx_new();
  UdsClient watcher;
  ASSERT_TRUE(watcher.connect(daemon.socket_path()));
  // Start subscribing once the streams run (the first engine step may compile kernels).
  for (int tries = 0; tries < 600; ++tries) {
    auto st = request(watcher, simple(proto::StatusRequest{"late-0"}, 99));
    ASSERT_TRUE(st);
    const auto* status = std::get_if<proto::StatusAnswer>(&st->body);
    ASSERT_NE(status, nullptr);
    if (status->last_seq >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<std::unique_ptr<ZmqSubscriber>> subs;
  std::vector<StreamCollector> streams;
  int joined_mid_stream = 0;
  for (int i = 0; i < kStreams; ++i) {
    const std::string id = "late-" + std::to_string(i);
    auto st = request(watcher, simple(proto::StatusRequest{id}, 100 + i));
    ASSERT_TRUE(st);
    const auto* status = std::get_if<proto::StatusAnswer>(&st->body);
    ASSERT_NE(status, nullptr);
    joined_mid_stream += status->last_seq >= 0 && status->state != proto::RequestState::kFinished;
    auto sub = std::make_unique<ZmqSubscriber>(ctx);
    ASSERT_TRUE(sub->connect(daemon.pub_endpoint()));
    sub->subscribe(status->topic);
    subs.push_back(std::move(sub));
    streams.emplace_back(id);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  EXPECT_GT(joined_mid_stream, 0) << "too few subscribers joined mid-stream to test anything";

  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE("stream " + std::to_string(i));
    ASSERT_TRUE(collect(*subs[static_cast<size_t>(i)], streams[static_cast<size_t>(i)], 60000));
    // Anything still arriving for this topic would be a duplicate.
    while (auto m = subs[static_cast<size_t>(i)]->recv(100)) {
      auto parsed = proto::parse_server_message(m->second);
      ASSERT_TRUE(parsed);
      streams[static_cast<size_t>(i)].add(*parsed);
    }
    EXPECT_TRUE(streams[static_cast<size_t>(i)].arrived_in_order) << "a live event came before the catch-up";
    EXPECT_EQ(streams[static_cast<size_t>(i)].duplicates, 0);
    EXPECT_EQ(streams[static_cast<size_t>(i)].token_events() > 0, true);
  }
  subs.clear();
  zmq_ctx_term(ctx);
  stop_owner = true;
  owner_reader.join();
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

bool is_catchup(const std::string& payload) { return payload.find("\xa7" "catchup" "\xc3") != std::string::npos; }

// Issue 37: a late subscriber's catch-up is published on the request's topic, so a firehose
// subscriber (prefix `vks.`) received those events twice, indistinguishable from the live ones.
// Catch-up events are marked `catchup: true`: without them the firehose sees every seq once.
TEST(ServerLateSubscriberTest, FirehoseCanTellCatchUpFromLiveEvents) {
  TempDir dir;
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(40)) << daemon.log();
  void* ctx = zmq_ctx_new();
  {  // the sockets close before zmq_ctx_term, which waits for them
    ZmqSubscriber firehose(ctx);
    ASSERT_TRUE(firehose.connect(daemon.pub_endpoint()));
    firehose.subscribe("vks.");

    UdsClient owner;
    ASSERT_TRUE(owner.connect(daemon.socket_path()));
    ASSERT_TRUE(wait_for_subscriptions(owner, 1)) << daemon.log();  // the firehose sees every event from here
    proto::Request req = greedy_request(300, true);
    std::get<proto::GenerateRequest>(req.body).id = "fh-0";
    std::get<proto::GenerateRequest>(req.body).stream = false;
    req.tag = proto::Tag::of(1);
    ASSERT_TRUE(owner.send(req));
    std::string topic;
    for (int tries = 0; tries < 600 && topic.empty(); ++tries) {
      auto st = request(owner, simple(proto::StatusRequest{"fh-0"}, 2));
      ASSERT_TRUE(st);
      if (const auto* status = std::get_if<proto::StatusAnswer>(&st->body); status != nullptr && status->last_seq >= 2) {
        topic = status->topic;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
  }
  ASSERT_FALSE(topic.empty());
  ZmqSubscriber late(ctx);
  ASSERT_TRUE(late.connect(daemon.pub_endpoint()));
  late.subscribe(topic);
  StreamCollector late_stream("fh-0");
  ASSERT_TRUE(collect(late, late_stream, 60000));
  EXPECT_EQ(late_stream.duplicates, 0);

  // Everything the firehose got for this request, until it has been quiet for a while.
  std::map<int64_t, int> live_by_seq;
  int marked = 0;
  bool finished = false;
  while (auto m = firehose.recv(finished ? 500 : 30000)) {
    if (m->first != topic) continue;
    auto parsed = proto::parse_server_message(m->second);
    ASSERT_TRUE(parsed);
    const auto* ev = std::get_if<proto::StreamEvent>(&parsed->body);
    ASSERT_NE(ev, nullptr);
    if (is_catchup(m->second)) {
      ++marked;
      continue;
    }
    ++live_by_seq[ev->seq];
    finished = finished || ev->type == proto::StreamEventType::kFinished;
  }
  EXPECT_TRUE(finished);
  EXPECT_GT(marked, 0) << "the late subscriber's catch-up reached the firehose unmarked";
  for (const auto& [seq, n] : live_by_seq) EXPECT_EQ(n, 1) << "seq " << seq << " reached the firehose " << n << " times";
  EXPECT_EQ(static_cast<int64_t>(live_by_seq.size()), late_stream.last_seq + 1);
  }
  zmq_ctx_term(ctx);
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

}  // namespace
}  // namespace vks::test
