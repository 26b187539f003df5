#include "server/uds_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include "engine/common/error.h"
#include "protocol/responses.h"
#include "server/listen_fds.h"

namespace vks::server {

bool PeerPolicy::allows(const ucred& peer) const {
  if (std::find(deny_uids.begin(), deny_uids.end(), peer.uid) != deny_uids.end()) return false;
  if (peer.uid == getuid() || peer.uid == 0) return true;
  if (std::find(allow_uids.begin(), allow_uids.end(), peer.uid) != allow_uids.end()) return true;
  if (allow_gids.empty()) return false;
  if (std::find(allow_gids.begin(), allow_gids.end(), peer.gid) != allow_gids.end()) return true;
  // SO_PEERCRED carries the primary group only: look at the user's supplementary groups too.
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(peer.uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return false;
  int n = 64;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (getgrouplist(pw.pw_name, peer.gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<size_t>(n));
    if (getgrouplist(pw.pw_name, peer.gid, groups.data(), &n) < 0) return false;
  }
  groups.resize(static_cast<size_t>(n));
  for (gid_t g : groups) {
    if (std::find(allow_gids.begin(), allow_gids.end(), g) != allow_gids.end()) return true;
  }
  return false;
}

void make_directories(const std::string& dir, uint32_t mode) {
  if (dir.empty()) return;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    const std::string prefix = dir.substr(0, pos);
    if (prefix.empty()) continue;
    if (mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      throw Error(ErrorCode::kIo, "cannot create folder " + prefix + ": " + strerror(errno) +
                                      " (create it, or choose another socket path)");
    }
  }
}

namespace {

// True when something accepts connections on `path` (a live server).
bool socket_answers(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

UdsServer::UdsServer(uv_loop_t* loop, const proto::ProtocolLimits& limits, PeerPolicy policy, Hooks hooks)
    : loop_(loop), limits_(limits), policy_(std::move(policy)), hooks_(std::move(hooks)) {
  listener_.data = this;
}

UdsServer::~UdsServer() = default;

void UdsServer::adopt(int fd) {
  uv_pipe_init(loop_, &listener_, 0);
  listener_open_ = true;
  const int rc = uv_pipe_open(&listener_, fd);
  if (rc != 0) {
    throw Error(ErrorCode::kIo, std::string("cannot adopt the socket-activated 'uds' descriptor: ") + uv_strerror(rc));
  }
  path_ = unix_socket_path(fd);
  listen_or_throw();
}

void UdsServer::bind(const std::string& path, uint32_t mode) {
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    throw Error(ErrorCode::kInvalidArgument, "socket path too long (" + std::to_string(path.size()) +
                                                 " bytes, at most 107): " + path);
  }
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) make_directories(path.substr(0, slash), 0750);
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      throw Error(ErrorCode::kInvalidArgument, path + " exists and is not a socket: remove it or pass another --socket");
    }
    if (socket_answers(path)) {
      throw Error(ErrorCode::kInvalidArgument, "socket " + path +
                  " is in use by a running server: stop it (systemctl stop vkstream) or pass another --socket");
    }
    unlink(path.c_str());  // stale file of a dead server
  }
  uv_pipe_init(loop_, &listener_, 0);
  listener_open_ = true;
  int rc = uv_pipe_bind(&listener_, path.c_str());
  if (rc != 0) {
    throw Error(ErrorCode::kIo, "cannot bind " + path + ": " + uv_strerror(rc));
  }
  own_socket_file_ = true;
  path_ = path;
  if (chmod(path.c_str(), mode) != 0) {
    throw Error(ErrorCode::kIo, "cannot chmod " + path + ": " + strerror(errno));
  }
  listen_or_throw();
}

void UdsServer::listen_or_throw() {
  const int rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 256, &UdsServer::on_connection);
  if (rc != 0) throw Error(ErrorCode::kIo, "cannot listen on " + path_ + ": " + uv_strerror(rc));
}

void UdsServer::on_connection(uv_stream_t* server, int status) {
  auto* self = static_cast<UdsServer*>(server->data);
  if (status != 0) {
    spdlog::warn("accept on {}: {}", self->path_, uv_strerror(status));
    return;
  }
  try {
    self->accept_one();
  } catch (const std::exception& e) {
    spdlog::error("accept: {}", e.what());
  } catch (...) {
    spdlog::error("accept: unknown exception");
  }
}

void UdsServer::accept_one() {
  const uint64_t id = next_id_++;
  auto conn = std::make_unique<Connection>(
      id, limits_,
      [this](Connection& c, std::string& payload) { hooks_.on_frame(c, payload); },
      [this](Connection& c) {
        const uint64_t cid = c.id();
        hooks_.on_closed(c);
        connections_.erase(cid);  // deletes c
      },
      hooks_.on_framing_error);
  conn->init(loop_);
  Connection& c = *conn;
  connections_.emplace(id, std::move(conn));
  if (uv_accept(reinterpret_cast<uv_stream_t*>(&listener_), c.stream()) != 0) {
    c.close_now();
    return;
  }
  uv_os_fd_t fd = -1;
  ucred peer{};
  socklen_t len = sizeof(peer);
  if (uv_fileno(reinterpret_cast<uv_handle_t*>(c.pipe()), &fd) != 0 ||
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) {
    spdlog::warn("connection {}: cannot read peer credentials; refusing it", id);
    c.close_now();
    return;
  }
  c.set_peer(peer);
  if (connections_.size() > max_connections_) {  // this one included
    spdlog::warn("connection {}: {} connections open, the limit (--max-connections): answering overloaded", id,
                 max_connections_);
    c.send_unbounded(proto::encode_error(proto::make_error(
        proto::WireError::kOverloaded,
        "too many open connections (limit " + std::to_string(max_connections_) + "); retry later")));
    c.close_after_flush();
    return;
  }
  if (!policy_.allows(peer)) {
    spdlog::warn("connection {}: refused pid {} uid {} gid {} (not in --allow-uid/--allow-gid)", id,
                 peer.pid, peer.uid, peer.gid);
    c.send_unbounded(proto::encode_error(proto::make_error(
        proto::WireError::kUnauthorized, "uid " + std::to_string(peer.uid) + " is not allowed on this socket")));
    c.close_after_flush();
    return;
  }
  spdlog::debug("connection {}: pid {} uid {} gid {}", id, peer.pid, peer.uid, peer.gid);
  hooks_.on_open(c);
  c.start_reading();
}

void UdsServer::stop_accepting() {
  if (!listener_open_) return;
  listener_open_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
  if (own_socket_file_) {
    unlink(path_.c_str());
    own_socket_file_ = false;
  }
}

void UdsServer::close_all(bool flush) {
  std::vector<Connection*> all;
  all.reserve(connections_.size());
  for (auto& [id, c] : connections_) all.push_back(c.get());
  for (Connection* c : all) {
    if (flush) {
      c->close_after_flush();
    } else {
      c->close_now();
    }
  }
}

Connection* UdsServer::find(uint64_t id) {
  auto it = connections_.find(id);
  return it == connections_.end() ? nullptr : it->second.get();
}

}  // namespace vks::server
