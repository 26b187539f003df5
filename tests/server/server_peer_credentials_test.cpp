// Issue 14, fault 1: --allow-uid holds on every local endpoint. With --socket-mode 0666 any local
// user can open the socket files; a uid the Unix socket refuses must be refused by the ZeroMQ
// ROUTER (no answers, no cancel, no stats) and the XPUB (no events) as well, and an allowed uid
// must get through all three. The clients run in forked children that switch to another uid.
#include <gtest/gtest.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <cstring>
#include <string>

#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

constexpr uid_t kAllowedUid = 65534;  // nobody
constexpr uid_t kRefusedUid = 65533;

enum ProbeResult { kAnswered = 0, kRefused = 2, kSetupFailed = 3 };

// What a peer on `endpoint` gets: an answer to hello (Unix socket / ROUTER) or the catch-up of
// `topic` (XPUB). Returns kAnswered, or kRefused when nothing useful came within the time.
int probe_as_self(const std::string& kind, const std::string& endpoint, const std::string& topic) {
  if (kind == "uds") {
    UdsClient c;
    if (!c.connect(endpoint)) return kRefused;
    auto m = request(c, simple(proto::HelloRequest{}, 1), 3000);
    return m && std::holds_alternative<proto::HelloAnswer>(m->body) ? kAnswered : kRefused;
  }
  void* ctx = zmq_ctx_new();
  int result = kRefused;
  if (kind == "router") {
    ZmqClient c(ctx);
    if (!c.connect(endpoint) || !c.send(simple(proto::StatsRequest{}, 1))) return kSetupFailed;
    auto m = c.recv(3000);
    if (m && std::holds_alternative<proto::StatsAnswer>(m->body)) result = kAnswered;
  } else {
    ZmqSubscriber sub(ctx);
    if (!sub.connect(endpoint)) return kSetupFailed;
    sub.subscribe(topic);
    if (sub.recv(3000)) result = kAnswered;
  }
  zmq_ctx_term(ctx);
  return result;
}

// Runs probe_as_self in a child process with uid and gid `uid` and no supplementary groups.
int probe_as(uid_t uid, const std::string& kind, const std::string& endpoint, const std::string& topic) {
  const pid_t pid = fork();
  if (pid < 0) return kSetupFailed;
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) _exit(kSetupFailed);
    _exit(probe_as_self(kind, endpoint, topic));
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return kSetupFailed;
  return WEXITSTATUS(status);
}

TEST(ServerPeerCredentialsTest, AllowListHoldsOnTheZeroMqEndpointsToo) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run clients as other uids (setresuid)";
  TempDir dir;
  ASSERT_EQ(chmod(dir.path.c_str(), 0755), 0);  // the socket files' mode decides, not the folder
  DaemonProcess daemon;
  DaemonConfig config;
  config.dir = dir.path;
  config.extra_args = {"--socket-mode", "0666", "--allow-uid", "0", "--allow-uid", std::to_string(kAllowedUid)};
  daemon.start(config);
  ASSERT_TRUE(daemon.wait_ready(40)) << daemon.log();

  // A finished, retained request: subscribing to its full topic brings its catch-up at once.
  UdsClient owner;
  ASSERT_TRUE(owner.connect(daemon.socket_path()));
  auto accepted = request(owner, greedy_request(5));
  ASSERT_TRUE(accepted);
  const auto* a = std::get_if<proto::AcceptedAnswer>(&accepted->body);
  ASSERT_NE(a, nullptr);
  StreamCollector stream(a->id);
  ASSERT_TRUE(collect(owner, stream, 30000));

  const struct {
    const char* kind;
    std::string endpoint;
  } endpoints[] = {{"uds", daemon.socket_path()}, {"router", daemon.router_endpoint()}, {"pub", daemon.pub_endpoint()}};
  for (const auto& ep : endpoints) {
    SCOPED_TRACE(ep.kind);
    EXPECT_EQ(probe_as(kAllowedUid, ep.kind, ep.endpoint, a->topic), kAnswered) << "an allowed uid was refused";
    EXPECT_EQ(probe_as(kRefusedUid, ep.kind, ep.endpoint, a->topic), kRefused) << "a refused uid got through";
  }
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20), 0) << daemon.log();
}

}  // namespace
}  // namespace vks::test
