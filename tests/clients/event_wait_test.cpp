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
using namespace std::chrono_literals;

Value answer(const Value& req, const std::string& type, Value::Map fields = {}) {
  Value v = Value::Map{{"type", Value(type)}, {"tag", *req.find("tag")}};
  for (auto& [k, f] : fields) v.set(k, f);
  return v;
}

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
    EXPECT_NE(std::string(e.what()).find("did not answer a stats request"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("request r1"), std::string::npos) << e.what();
  }
}

}  // namespace
