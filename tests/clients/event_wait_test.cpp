// The CLI's wait for a request's events (clients/cli/event_wait.h): a silent request whose daemon
// still answers is waited for (a long prefill), a daemon that answers nothing is reported as such.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "clients/cli/event_wait.h"
#include "tests/clients/fake_daemon.h"
#include "vkstream/client.h"

namespace {

using vkstream::Value;
using vks::test::FakeDaemon;
using vks::test::answer;
using namespace std::chrono_literals;

// A daemon that accepts a generate and then says nothing about it until it is asked for its
// stats the `answer_after`-th time: then the request's token and finished events follow. With
// answer_stats false it never answers stats.
FakeDaemon silent_daemon(std::atomic<int>& stats_asked, int answer_after, bool answer_stats) {
  return FakeDaemon([&stats_asked, answer_after, answer_stats](const Value& req) -> std::vector<Value> {
    const std::string type = req.get_string("type");
    if (type == "generate") return {answer(req, "accepted", {{"id", Value("r1")}, {"topic", Value("vks.0")}})};
    if (type != "stats" || !answer_stats) return {};
    const int n = ++stats_asked;
    std::vector<Value> out{answer(req, "stats", {{"stats", Value(Value::Map{{"running", Value(1)}})}})};
    if (n == answer_after) {
      out.push_back(Value::Map{{"type", Value("token")}, {"id", Value("r1")}, {"seq", Value(0)},
                               {"ids", Value(Value::Array{Value(7)})}, {"text", Value("Hi")}});
      out.push_back(Value::Map{{"type", Value("finished")}, {"id", Value("r1")}, {"seq", Value(1)},
                               {"reason", Value("stop")}});
    }
    return out;
  });
}

TEST(CliEventWait, ASilentRequestOfALiveDaemonIsWaitedFor) {
  std::atomic<int> stats_asked{0};
  FakeDaemon daemon = silent_daemon(stats_asked, 2, true);
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  vkstream::GenerateOptions o;
  o.prompt = "a long prompt";
  const vkstream::Accepted accepted = c.submit(o);
  vks::cli::RequestEventWait waiter(c, accepted.id, 150ms);
  std::string text;
  std::string reason;
  for (int i = 0; i < 100 && reason.empty(); ++i) {  // 100 polls of 20 ms: the silence twice over
    std::optional<vkstream::Event> ev = waiter.next(20ms);
    if (!ev) continue;
    if (ev->kind == vkstream::EventKind::kToken) text += ev->text;
    if (ev->kind == vkstream::EventKind::kFinished) reason = ev->finish_reason;
  }
  EXPECT_EQ(text, "Hi");
  EXPECT_EQ(reason, "stop");
  EXPECT_EQ(waiter.liveness_checks(), 2);  // silent twice, alive both times
}

// Issue 37: a daemon reading a long prompt sends `progress` events (no seq); each restarts the
// silence timer, so a prefill longer than --timeout is waited for without a liveness check (this
// fake never answers stats: a check would end the wait with an error).
TEST(CliEventWait, ProgressEventsKeepTheWaitGoingWithoutAStatsCheck) {
  FakeDaemon daemon([](const Value& req) -> std::vector<Value> {
    if (req.get_string("type") != "generate") return {};
    std::vector<Value> out{answer(req, "accepted", {{"id", Value("r1")}, {"topic", Value("vks.0")}})};
    for (int done = 8; done <= 64; done += 8) {  // 8 x 50 ms: twice the silence allowed, in gaps of a quarter
      out.push_back(FakeDaemon::pause_marker(50));
      out.push_back(Value::Map{{"type", Value("progress")}, {"id", Value("r1")}, {"prompt_tokens", Value(64)},
                               {"prompt_tokens_done", Value(done)}, {"cached_tokens", Value(0)}});
    }
    out.push_back(Value::Map{{"type", Value("token")}, {"id", Value("r1")}, {"seq", Value(0)},
                             {"ids", Value(Value::Array{Value(7)})}, {"text", Value("Hi")}});
    out.push_back(Value::Map{{"type", Value("finished")}, {"id", Value("r1")}, {"seq", Value(1)},
                             {"reason", Value("stop")}});
    return out;
  });
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  c.set_timeout(200ms);
  vkstream::GenerateOptions o;
  o.prompt = "x";
  const vkstream::Accepted accepted = c.submit(o);
  vks::cli::RequestEventWait waiter(c, accepted.id, 200ms);
  std::vector<int64_t> done;
  std::string reason, last_line;
  for (int i = 0; i < 200 && reason.empty(); ++i) {
    std::optional<vkstream::Event> ev = waiter.next(20ms);
    if (!ev) continue;
    if (ev->kind == vkstream::EventKind::kProgress) {
      done.push_back(ev->prompt_tokens_done);
      last_line = vks::cli::describe_progress(*ev);
    }
    if (ev->kind == vkstream::EventKind::kFinished) reason = ev->finish_reason;
  }
  EXPECT_EQ(reason, "stop");
  EXPECT_EQ(done, (std::vector<int64_t>{8, 16, 24, 32, 40, 48, 56, 64}));
  EXPECT_EQ(last_line, "[prompt 64/64 tokens read]");
  EXPECT_EQ(waiter.liveness_checks(), 0);
}

TEST(CliEventWait, ADaemonThatAnswersNothingIsReportedAsSuch) {
  std::atomic<int> stats_asked{0};
  FakeDaemon daemon = silent_daemon(stats_asked, 0, false);
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  c.set_timeout(200ms);
  vkstream::GenerateOptions o;
  o.prompt = "x";
  const vkstream::Accepted accepted = c.submit(o);
  vks::cli::RequestEventWait waiter(c, accepted.id, 100ms);
  try {
    for (int i = 0; i < 100; ++i) (void)waiter.next(20ms);
    FAIL() << "a daemon answering nothing was waited for";
  } catch (const vkstream::ClientError& e) {
    EXPECT_EQ(e.kind(), vkstream::ErrorKind::kTimeout);
    EXPECT_NE(std::string(e.what()).find("the daemon sent nothing for 100 ms"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no answer to a stats request"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("request r1"), std::string::npos) << e.what();
  }
}

}  // namespace
