#pragma once
// A ZeroMQ socket driven by the libuv loop: uv_poll on its ZMQ_FD. ZMQ_FD is edge-triggered, so
// after every receive and every send the socket's ZMQ_EVENTS must be drained again: drain() runs
// from the poll callback, and a send schedules a drain on an idle handle (never recursively).
#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vks::server {

// The ipc:// endpoint's path, or the tcp endpoint; CURVE and descriptor adoption options.
struct ZmqBindOptions {
  std::string endpoint;          // ipc://path or tcp://host:port
  int adopt_fd = -1;             // socket-activated listening descriptor (ZMQ_USE_FD), -1 = none
  std::string curve_secret_key;  // Z85; required for tcp://
  uint32_t socket_mode = 0660;   // for ipc:// sockets we create
  int max_message_bytes = 0;     // ZMQ_MAXMSGSIZE (0 = unlimited)
  // ipc:// only: the peers admitted (ZMQ_IPC_FILTER_UID/GID); both empty = no filter.
  std::vector<uint32_t> ipc_allow_uids;
  std::vector<uint32_t> ipc_allow_gids;
};

class ZmqSocket {
 public:
  using MessageHandler = std::function<void(std::vector<std::string>& frames)>;

  // type: ZMQ_ROUTER or ZMQ_XPUB. Throws vks::Error on failure.
  ZmqSocket(void* context, int type, uv_loop_t* loop, MessageHandler on_message);
  ~ZmqSocket();
  ZmqSocket(const ZmqSocket&) = delete;
  ZmqSocket& operator=(const ZmqSocket&) = delete;

  void set_int(int option, int value);
  // Byte-valued option; false (logged) when ZeroMQ refuses it.
  bool set_bytes(int option, std::string_view value);
  // Binds (adopting the descriptor when given) and starts polling. Throws vks::Error saying what
  // to fix (socket in use, tcp:// without CURVE key, bad endpoint).
  void bind(const ZmqBindOptions& options);
  const std::string& endpoint() const { return endpoint_; }

  // Non-blocking multipart send. False on EAGAIN (high-water mark) or EHOSTUNREACH.
  bool send(const std::vector<std::string_view>& frames);
  // Closes the poll and idle handles (the loop finishes them) and the socket (linger applies).
  void close();

 private:
  static void on_poll(uv_poll_t* poll, int status, int events);
  static void on_idle(uv_idle_t* idle);
  void drain();
  void schedule_drain();
  void apply_ipc_filter(const ZmqBindOptions& options);

  void* socket_ = nullptr;
  uv_loop_t* loop_;
  MessageHandler on_message_;
  uv_poll_t poll_{};
  uv_idle_t idle_{};
  bool handles_open_ = false;
  bool draining_ = false;
  bool drain_scheduled_ = false;
  std::string endpoint_;
  std::string unlink_path_;  // ipc socket file we created
};

}  // namespace vks::server
