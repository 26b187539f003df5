// End to end, real daemon on stories260K.gguf: greedy streams over the Unix socket and ZeroMQ,
// late PUB subscribers, replay, status, cancel from a second client, killed clients.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <thread>

#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

class ServerStreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    daemon_ = new DaemonProcess();
    DaemonConfig config;
    config.dir = dir_->path;
    config.extra_args = {"--log-level", "debug"};
    daemon_->start(config);
    ready_ = daemon_->wait_ready(40);
    zmq_ = zmq_ctx_new();
  }
  static void TearDownTestSuite() {
    zmq_ctx_term(zmq_);
    daemon_->signal(SIGTERM);
    const int rc = daemon_->wait_exit(20);
    EXPECT_EQ(rc, 0) << daemon_->log();
    delete daemon_;
    delete dir_;
  }
  void SetUp() override { ASSERT_TRUE(ready_) << "daemon did not start:\n" << daemon_->log(); }

  static std::string accepted_id(const std::optional<proto::ServerMessage>& m, std::string* topic = nullptr) {
    if (!m) return {};
    const auto* a = std::get_if<proto::AcceptedAnswer>(&m->body);
    if (a == nullptr) return {};
    if (topic != nullptr) *topic = a->topic;
    return a->id;
  }

  static TempDir* dir_;
  static DaemonProcess* daemon_;
  static bool ready_;
  static void* zmq_;
};
TempDir* ServerStreamTest::dir_ = nullptr;
DaemonProcess* ServerStreamTest::daemon_ = nullptr;
bool ServerStreamTest::ready_ = false;
void* ServerStreamTest::zmq_ = nullptr;

TEST_F(ServerStreamTest, HelloReportsLimitsAndEndpoints) {
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  auto m = request(c, simple(proto::HelloRequest{}, 42));
  ASSERT_TRUE(m);
  const auto* h = std::get_if<proto::HelloAnswer>(&m->body);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(m->tag, proto::Tag::of(42));
  EXPECT_EQ(h->version, proto::PROTOCOL_VERSION);
  EXPECT_EQ(h->limits.max_frame_bytes, 1u << 20);
  EXPECT_GT(h->limits.max_prompt_tokens, 0);
  EXPECT_GT(h->limits.max_tokens, 0);
  EXPECT_EQ(h->limits.max_requests_per_connection, 64);
  EXPECT_EQ(h->pub_endpoint, daemon_->pub_endpoint());
  EXPECT_EQ(h->router_endpoint, daemon_->router_endpoint());
  EXPECT_EQ(h->model.vocab_size, 512);
}

TEST_F(ServerStreamTest, GreedyOverUnixSocketMatchesReference) {
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  auto m = request(c, greedy_request(60));
  const std::string id = accepted_id(m);
  ASSERT_FALSE(id.empty());
  EXPECT_TRUE(proto::is_server_request_id(id));
  StreamCollector s{id};
  ASSERT_TRUE(collect(c, s, 30000));
  EXPECT_TRUE(s.arrived_in_order);
  EXPECT_EQ(s.duplicates, 0);
  EXPECT_EQ(s.ids(), reference_generated_ids());
  EXPECT_EQ(s.reason(), FinishReason::kLength);
  EXPECT_NE(s.text().find("Lily"), std::string::npos) << s.text();
}

TEST_F(ServerStreamTest, GreedyOverZeroMqMatchesReference) {
  ZmqClient c(zmq_);
  ASSERT_TRUE(c.connect(daemon_->router_endpoint()));
  ASSERT_TRUE(c.send(greedy_request(60)));
  auto m = c.recv(10000);
  std::string topic;
  const std::string id = accepted_id(m, &topic);
  ASSERT_FALSE(id.empty());
  EXPECT_TRUE(proto::is_valid_topic(topic));
  StreamCollector s{id};
  ASSERT_TRUE(collect(c, s, 30000));
  EXPECT_TRUE(s.arrived_in_order);
  EXPECT_EQ(s.ids(), reference_generated_ids());
}

TEST_F(ServerStreamTest, LateSubscriberReceivesEveryEventFromSeqZero) {
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  auto m = request(c, greedy_request(60));
  std::string topic;
  const std::string id = accepted_id(m, &topic);
  ASSERT_FALSE(id.empty());
  // Let the stream run ahead before subscribing.
  StreamCollector direct{id};
  while (direct.token_events() < 5 && !direct.finished) {
    auto ev = c.recv(10000);
    ASSERT_TRUE(ev);
    direct.add(*ev);
  }
  ZmqSubscriber sub(zmq_);
  ASSERT_TRUE(sub.connect(daemon_->pub_endpoint()));
  sub.subscribe(topic);
  StreamCollector late{id};
  ASSERT_TRUE(collect(sub, late, 30000));
  EXPECT_TRUE(late.complete());
  EXPECT_EQ(late.ids(), reference_generated_ids());
  ASSERT_TRUE(collect(c, direct, 30000));
  EXPECT_EQ(late.last_seq, direct.last_seq);

  // A subscriber arriving after the request finished still gets the retained stream.
  ZmqSubscriber after(zmq_);
  ASSERT_TRUE(after.connect(daemon_->pub_endpoint()));
  after.subscribe(topic);
  StreamCollector retained{id};
  ASSERT_TRUE(collect(after, retained, 10000));
  EXPECT_TRUE(retained.arrived_in_order);
  EXPECT_EQ(retained.ids(), reference_generated_ids());
}

TEST_F(ServerStreamTest, ReplayAndStatusOfAFinishedRequest) {
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  const std::string id = accepted_id(request(c, greedy_request(60)));
  ASSERT_FALSE(id.empty());
  StreamCollector s{id};
  ASSERT_TRUE(collect(c, s, 30000));

  auto st = request(c, simple(proto::StatusRequest{id}, 3));
  ASSERT_TRUE(st);
  const auto* status = std::get_if<proto::StatusAnswer>(&st->body);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->state, proto::RequestState::kFinished);
  EXPECT_EQ(status->last_seq, s.last_seq);
  EXPECT_EQ(status->generated_tokens, 60);

  auto rp = request(c, simple(proto::ReplayRequest{id, 3}, 4));
  ASSERT_TRUE(rp);
  const auto* replay = std::get_if<proto::ReplayAnswer>(&rp->body);
  ASSERT_NE(replay, nullptr);
  ASSERT_FALSE(replay->events.empty());
  EXPECT_EQ(replay->events.front().seq, 3);
  EXPECT_EQ(replay->events.back().seq, s.last_seq);
  EXPECT_TRUE(replay->finished);

  auto unknown = request(c, simple(proto::ReplayRequest{"no-such-request", 0}, 5));
  ASSERT_TRUE(unknown);
  const auto* err = std::get_if<proto::ErrorAnswer>(&unknown->body);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->error.code, proto::WireError::kNotFound);
}

TEST_F(ServerStreamTest, CancelFromASecondClient) {
  UdsClient owner;
  ASSERT_TRUE(owner.connect(daemon_->socket_path()));
  const std::string id = accepted_id(request(owner, greedy_request(1500, /*ignore_eos=*/true)));
  ASSERT_FALSE(id.empty());
  StreamCollector s{id};
  while (s.token_events() < 2 && !s.finished) {
    auto ev = owner.recv(10000);
    ASSERT_TRUE(ev);
    s.add(*ev);
  }
  ZmqClient other(zmq_);
  ASSERT_TRUE(other.connect(daemon_->router_endpoint()));
  ASSERT_TRUE(other.send(simple(proto::CancelRequest{id}, 9)));
  auto answer = other.recv(10000);
  ASSERT_TRUE(answer);
  const auto* cancelled = std::get_if<proto::CancelledAnswer>(&answer->body);
  ASSERT_NE(cancelled, nullptr);
  EXPECT_EQ(cancelled->id, id);
  ASSERT_TRUE(collect(owner, s, 30000));
  EXPECT_EQ(s.reason(), FinishReason::kCancelled);
  EXPECT_LT(s.ids().size(), 1500u);
}

TEST_F(ServerStreamTest, KilledClientFreesItsRequest) {
  // A child process submits a long request and is SIGKILLed mid-stream.
  std::string frame;
  proto::append_frame(frame, proto::encode_request(greedy_request(1500, true)));
  const std::string path = daemon_->socket_path();
  int ready_pipe[2];
  ASSERT_EQ(pipe(ready_pipe), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only async-signal-safe calls from here on.
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    for (size_t i = 0; i < path.size() && i + 1 < sizeof(addr.sun_path); ++i) addr.sun_path[i] = path[i];
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) _exit(2);
    if (write(fd, frame.data(), frame.size()) != static_cast<ssize_t>(frame.size())) _exit(3);
    char buf[4096];
    size_t got = 0;
    while (got < 2000) {  // accepted + a few token events
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) _exit(4);
      got += static_cast<size_t>(n);
    }
    if (write(ready_pipe[1], "r", 1) != 1) _exit(5);
    for (;;) pause();
  }
  close(ready_pipe[1]);
  char r = 0;
  ASSERT_EQ(read(ready_pipe[0], &r, 1), 1);
  close(ready_pipe[0]);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);

  // The daemon notices the disconnect and cancels the request: nothing keeps running.
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  bool idle = false;
  for (int i = 0; i < 200 && !idle; ++i) {
    auto m = request(c, simple(proto::StatsRequest{}, 1));
    ASSERT_TRUE(m);
    const auto* stats = std::get_if<proto::StatsAnswer>(&m->body);
    ASSERT_NE(stats, nullptr);
    idle = stats->stats.running == 0 && stats->stats.waiting == 0;
    if (!idle) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_TRUE(idle) << "the killed client's request is still running";
  EXPECT_NE(daemon_->log().find("client disconnected"), std::string::npos);
}

TEST_F(ServerStreamTest, DetachedRequestSurvivesItsClient) {
  std::string id;
  {
    UdsClient c;
    ASSERT_TRUE(c.connect(daemon_->socket_path()));
    proto::Request req = greedy_request(60);
    std::get<proto::GenerateRequest>(req.body).detached = true;
    id = accepted_id(request(c, req));
    ASSERT_FALSE(id.empty());
  }  // the connection closes here
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  proto::ReplayAnswer last;
  for (int i = 0; i < 400; ++i) {
    auto m = request(c, simple(proto::ReplayRequest{id, 0}, 1));
    ASSERT_TRUE(m);
    const auto* replay = std::get_if<proto::ReplayAnswer>(&m->body);
    ASSERT_NE(replay, nullptr);
    last = *replay;
    if (last.finished) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(last.finished);
  StreamCollector s{id};
  for (const proto::StreamEvent& ev : last.events) {
    proto::ServerMessage msg;
    msg.body = ev;
    s.add(msg);
  }
  EXPECT_TRUE(s.complete());
  EXPECT_EQ(s.ids(), reference_generated_ids());
}

TEST_F(ServerStreamTest, StatsInPrometheusText) {
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  proto::StatsRequest req;
  req.format = proto::StatsFormat::kPrometheus;
  auto m = request(c, simple(req, 1));
  ASSERT_TRUE(m);
  const auto* stats = std::get_if<proto::StatsAnswer>(&m->body);
  ASSERT_NE(stats, nullptr);
  EXPECT_NE(stats->text.find("vkstream_"), std::string::npos) << stats->text;
}

TEST_F(ServerStreamTest, TokenizeDetokenizeAndModel) {
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  proto::TokenizeRequest t;
  t.text = "Once upon a time";
  auto m = request(c, simple(t, 1));
  ASSERT_TRUE(m);
  const auto* tok = std::get_if<proto::TokenizeAnswer>(&m->body);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->ids, (std::vector<TokenId>{1, 403, 407, 261, 378}));
  auto d = request(c, simple(proto::DetokenizeRequest{reference_generated_ids()}, 2));
  ASSERT_TRUE(d);
  const auto* detok = std::get_if<proto::DetokenizeAnswer>(&d->body);
  ASSERT_NE(detok, nullptr);
  EXPECT_NE(detok->text.find("Lily"), std::string::npos);
  auto bad = request(c, simple(proto::DetokenizeRequest{{5, 99999}}, 3));
  ASSERT_TRUE(bad);
  const auto* err = std::get_if<proto::ErrorAnswer>(&bad->body);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->error.field, "ids.1");
  auto model = request(c, simple(proto::ModelRequest{}, 4));
  ASSERT_TRUE(model);
  ASSERT_TRUE(std::holds_alternative<proto::ModelAnswer>(model->body));
}

}  // namespace
}  // namespace vks::test
