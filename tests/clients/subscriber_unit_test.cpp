// Subscriber against a scripted XPUB socket and a fake daemon answering replay: events come out
// once each, in seq order; a gap on the PUB stream and a silent stream are filled through replay.
#include <gtest/gtest.h>

#include <unistd.h>

#include <zmq.hpp>

#include "clients/cpp/src/wire.h"
#include "tests/clients/fake_daemon.h"
#include "tests/clients/process_util.h"
#include "vkstream/client.h"

namespace {

using vkstream::Value;

const std::string kTopic = "vks.00112233445566778899aabbccddeeff";
const std::string kId = "req-1";

Value event(int64_t seq) {
  const bool last = seq == 4;
  Value v = Value::Map{{"type", Value(last ? "finished" : "token")}, {"id", Value(kId)}, {"seq", Value(seq)}};
  if (last) v.set("reason", Value("length"));
  else v.set("text", Value(std::string(1, static_cast<char>('a' + seq))));
  return v;
}

// A fake daemon whose replay returns every event from from_seq (0..4).
vks::test::FakeDaemon::Handler replay_handler(int* replays) {
  return [replays](const Value& req) -> std::vector<Value> {
    if (req.get_string("type") != "replay") return {};
    ++*replays;
    Value::Array evs;
    for (int64_t s = req.get_int("from_seq"); s <= 4; ++s) evs.push_back(event(s));
    return {Value::Map{{"type", Value("replay")}, {"tag", *req.find("tag")}, {"id", Value(kId)},
                       {"events", Value(std::move(evs))}, {"next_seq", Value(5)}, {"finished", Value(true)},
                       {"truncated", Value(false)}}};
  };
}

class ScriptedPub {
 public:
  ScriptedPub() : dir_(vks::test::make_temp_dir("vks-pub")), socket_(ctx_, zmq::socket_type::xpub) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind(endpoint());
  }
  ~ScriptedPub() {
    socket_.close();
    ::unlink((dir_ + "/pub.zmq").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string endpoint() const { return "ipc://" + dir_ + "/pub.zmq"; }
  // Waits for the subscriber's subscription message.
  bool await_subscription() {
    zmq::message_t m;
    socket_.set(zmq::sockopt::rcvtimeo, 5000);
    return socket_.recv(m, zmq::recv_flags::none).has_value() && m.size() > 0 && m.data<char>()[0] == 1;
  }
  void publish(int64_t seq) {
    socket_.send(zmq::buffer(kTopic), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(vkstream::detail::pack_value(event(seq))), zmq::send_flags::none);
  }

 private:
  std::string dir_;
  zmq::context_t ctx_;
  zmq::socket_t socket_;
};

std::string drain(vkstream::Subscriber& sub, std::vector<int64_t>* seqs) {
  std::string text;
  while (std::optional<vkstream::Event> ev = sub.next(std::chrono::seconds(5))) {
    seqs->push_back(ev->seq);
    text += ev->text;
  }
  return text;
}

TEST(SubscriberUnit, GapIsFilledThroughReplayAndDuplicatesDropped) {
  int replays = 0;
  vks::test::FakeDaemon daemon(replay_handler(&replays));
  vkstream::Client control = vkstream::Client::connect_unix(daemon.socket_path());
  ScriptedPub pub;
  vkstream::Subscriber sub(pub.endpoint(), kTopic, kId, &control);
  ASSERT_TRUE(pub.await_subscription());
  for (int64_t seq : {0, 1, 0, 1, 3}) pub.publish(seq);  // duplicates, then seq 2 missing
  std::vector<int64_t> seqs;
  EXPECT_EQ(drain(sub, &seqs), "abcd");
  EXPECT_EQ(seqs, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_GE(replays, 1);
  EXPECT_EQ(sub.replays_used(), replays);
}

TEST(SubscriberUnit, SilentStreamIsReadThroughReplay) {
  int replays = 0;
  vks::test::FakeDaemon daemon(replay_handler(&replays));
  vkstream::Client control = vkstream::Client::connect_unix(daemon.socket_path());
  ScriptedPub pub;
  vkstream::Subscriber sub(pub.endpoint(), kTopic, kId, &control);
  std::vector<int64_t> seqs;
  EXPECT_EQ(drain(sub, &seqs), "abcd");  // nothing published at all
  EXPECT_EQ(seqs, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_GE(replays, 1);
}

TEST(SubscriberUnit, WithoutControlASilentStreamTimesOut) {
  ScriptedPub pub;
  vkstream::Subscriber sub(pub.endpoint(), kTopic, kId, nullptr);
  try {
    (void)sub.next(std::chrono::milliseconds(300));
    FAIL() << "expected kTimeout";
  } catch (const vkstream::ClientError& e) {
    EXPECT_EQ(e.kind(), vkstream::ErrorKind::kTimeout);
  }
}

}  // namespace
