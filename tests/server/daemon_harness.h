#pragma once
// Test harness for the real vkstreamd: start it (directly or under systemd-socket-activate) in a
// temporary folder, talk to it over the Unix socket, ZeroMQ DEALER and SUB, collect streams.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/protocol.h"

namespace vks::test {

// Wire vocabulary (engine-free, protocol/wire_types.h) under the names the tests use.
using proto::FinishReason;
using proto::TokenId;

struct TempDir {
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};

std::string daemon_binary();  // build_dir()/server/vkstreamd
std::string stories_model();  // stories260K.gguf
// The 60 generated ids of reference/stories260K_greedy_once_upon_a_time_n64.ids.
std::vector<TokenId> reference_generated_ids();

struct DaemonConfig {
  std::string dir;                      // sockets: dir/vkstream.sock, dir/router.zmq, dir/pub.zmq
  std::vector<std::string> extra_args;  // appended to the daemon's command line
  std::vector<std::string> env;         // NAME=VALUE added to the environment
  bool socket_activate = false;         // run under systemd-socket-activate with named fds
  std::string fdnames = "uds:router:pub";
  bool with_model = true;               // pass --model stories260K.gguf
};

class DaemonProcess {
 public:
  DaemonProcess() = default;
  ~DaemonProcess();  // SIGKILLs a daemon still running
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  void start(const DaemonConfig& config);
  // Connects to the Unix socket until it answers (true) or the process exits / time runs out.
  bool wait_ready(double timeout_s = 30);
  // Exit status (0..255), 128+signal if killed, or -1 when it is still running after timeout_s.
  int wait_exit(double timeout_s);
  void signal(int sig);
  bool running();
  std::string log() const;  // the daemon's stderr so far
  pid_t pid() const { return pid_; }

  std::string socket_path() const { return config_.dir + "/vkstream.sock"; }
  std::string router_endpoint() const { return "ipc://" + config_.dir + "/router.zmq"; }
  std::string pub_endpoint() const { return "ipc://" + config_.dir + "/pub.zmq"; }

 private:
  DaemonConfig config_;
  pid_t pid_ = -1;
  int status_ = -1;
  std::string log_path_;
};

class UdsClient {
 public:
  UdsClient() = default;
  ~UdsClient();
  UdsClient(const UdsClient&) = delete;
  UdsClient& operator=(const UdsClient&) = delete;

  bool connect(const std::string& path);
  bool send(std::string_view payload);       // framed
  bool send_raw(std::string_view bytes);     // as is
  bool send(const proto::Request& request) { return send(proto::encode_request(request)); }
  // Next frame payload; nullopt on timeout or when the server closed the connection (closed()).
  std::optional<std::string> recv_frame(int timeout_ms);
  std::optional<proto::ServerMessage> recv(int timeout_ms);
  bool closed() const { return closed_; }
  // Waits until the server closes the connection (true) or timeout; frames read meanwhile are
  // returned through `frames`.
  bool wait_closed(int timeout_ms, std::vector<std::string>* frames = nullptr);
  void close();
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  bool closed_ = false;
  std::string buffer_;
};

class ZmqClient {
 public:
  explicit ZmqClient(void* context);
  ~ZmqClient();
  bool connect(const std::string& endpoint);
  bool send(std::string_view payload);
  bool send(const proto::Request& request) { return send(proto::encode_request(request)); }
  std::optional<std::string> recv_raw(int timeout_ms);
  std::optional<proto::ServerMessage> recv(int timeout_ms);

 private:
  void* socket_ = nullptr;
};

class ZmqSubscriber {
 public:
  explicit ZmqSubscriber(void* context);
  ~ZmqSubscriber();
  bool connect(const std::string& endpoint);
  void subscribe(const std::string& topic);
  // (topic, event payload)
  std::optional<std::pair<std::string, std::string>> recv(int timeout_ms);

 private:
  void* socket_ = nullptr;
};

// Collects a request's stream events by seq (duplicates dropped, gaps detected) until `finished`.
struct StreamCollector {
  explicit StreamCollector(std::string request_id = {}) : id(std::move(request_id)) {}
  std::string id;
  std::vector<std::optional<proto::StreamEvent>> by_seq;
  bool finished = false;
  int64_t last_seq = -1;
  int64_t duplicates = 0;
  bool arrived_in_order = true;  // every new event had exactly the next seq
  int64_t next_expected = 0;
  std::vector<proto::StreamEvent> progress;  // its `progress` events (not numbered), in arrival order

  // Feeds one server message; returns true when it was an event of this request.
  bool add(const proto::ServerMessage& m);
  bool complete() const;  // finished and every seq 0..last_seq present
  std::vector<TokenId> ids() const;
  std::string text() const;
  std::optional<FinishReason> reason() const;
  int token_events() const;
};

proto::Request greedy_request(int32_t max_tokens = 60, bool ignore_eos = false);
proto::Request simple(proto::RequestBody body, int64_t tag = 0);

// Reads from a UDS client until the collector completes or the deadline passes; answers that are
// not events of this request are appended to `others` when given.
bool collect(UdsClient& client, StreamCollector& stream, int timeout_ms,
             std::vector<proto::ServerMessage>* others = nullptr);
bool collect(ZmqClient& client, StreamCollector& stream, int timeout_ms);
bool collect(ZmqSubscriber& sub, StreamCollector& stream, int timeout_ms);

// Sends a request and waits for its direct answer (skipping stream events).
std::optional<proto::ServerMessage> request(UdsClient& client, const proto::Request& req, int timeout_ms = 10000);

// Polls `stats` until the daemon counts at least `n` PUB subscriptions: a subscription applied
// there, so events published from then on reach its subscriber (a fixed sleep after subscribing
// was too short on a loaded machine). False at the deadline.
bool wait_for_subscriptions(UdsClient& client, int32_t n, int timeout_ms = 20000);

}  // namespace vks::test
