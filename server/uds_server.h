#pragma once
// The Unix-socket listener and its connections. Peer credentials (SO_PEERCRED) are checked at
// accept against the allowed uids/gids; a refused peer gets `unauthorized` and is closed.
#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/limits.h"
#include "server/connection.h"

namespace vks::server {

struct PeerPolicy {
  // The daemon's own uid and root are always allowed (an allow-list adds to them) unless listed
  // in deny_uids; deny_uids wins over every allow.
  std::vector<uint32_t> allow_uids;
  std::vector<uint32_t> allow_gids;
  std::vector<uint32_t> deny_uids;
  bool allows(const ucred& peer) const;
};

class UdsServer {
 public:
  struct Hooks {
    std::function<void(Connection&)> on_open;                    // accepted and allowed
    std::function<void(Connection&, std::string& payload)> on_frame;
    std::function<void(Connection&)> on_closed;                  // right before deletion
    Connection::FramingErrorHandler on_framing_error;            // optional (see Connection)
  };

  UdsServer(uv_loop_t* loop, const proto::ProtocolLimits& limits, PeerPolicy policy, Hooks hooks);
  ~UdsServer();
  UdsServer(const UdsServer&) = delete;
  UdsServer& operator=(const UdsServer&) = delete;

  // Adopts a listening socket passed by systemd (the "uds" descriptor).
  void adopt(int fd);
  // Creates the parent folder, refuses a socket a live server answers on, replaces a stale one,
  // binds, chmods to `mode` and listens. Throws vks::Error saying what to fix.
  void bind(const std::string& path, uint32_t mode);
  const std::string& path() const { return path_; }

  void stop_accepting();          // closes the listener (and unlinks a socket file we created)
  void close_all(bool flush);     // every connection: after flushing queued output, or at once
  Connection* find(uint64_t id);
  size_t connection_count() const { return connections_.size(); }
  // Connections past this are answered `overloaded` and closed (default: no cap).
  void set_max_connections(size_t n) { max_connections_ = n; }
  bool idle() const { return connections_.empty() && !listener_open_; }

 private:
  static void on_connection(uv_stream_t* server, int status);
  size_t max_connections_ = SIZE_MAX;
  void accept_one();
  void listen_or_throw();

  uv_loop_t* loop_;
  proto::ProtocolLimits limits_;
  PeerPolicy policy_;
  Hooks hooks_;
  uv_pipe_t listener_{};
  bool listener_open_ = false;
  bool own_socket_file_ = false;
  std::string path_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
};

// mkdir -p with `mode` for the folders we create. Throws vks::Error(kIo).
void make_directories(const std::string& dir, uint32_t mode);

}  // namespace vks::server
