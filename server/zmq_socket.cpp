#include "server/zmq_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "engine/common/error.h"
#include "server/server_options.h"
#include "server/uds_server.h"

namespace vks::server {

namespace {

std::string mode_text(uint32_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", mode & 07777);
  return text;
}

[[noreturn]] void throw_zmq(const std::string& what) {
  throw Error(ErrorCode::kIo, what + ": " + zmq_strerror(zmq_errno()));
}

}  // namespace

ZmqSocket::ZmqSocket(void* context, int type, uv_loop_t* loop, MessageHandler on_message)
    : loop_(loop), on_message_(std::move(on_message)) {
  socket_ = zmq_socket(context, type);
  if (socket_ == nullptr) throw_zmq("zmq_socket");
  set_int(ZMQ_LINGER, 1000);
}

ZmqSocket::~ZmqSocket() {
  if (socket_ != nullptr) zmq_close(socket_);
}

void ZmqSocket::set_int(int option, int value) {
  if (zmq_setsockopt(socket_, option, &value, sizeof(value)) != 0) throw_zmq("zmq_setsockopt");
}

void ZmqSocket::apply_ipc_filter(const ZmqBindOptions& options) {
  // The same peers as on the Unix socket (--allow-uid/--allow-gid): libzmq checks SO_PEERCRED at
  // accept and closes a refused peer's connection before any message is read.
  bool ok = true;
  for (const uint32_t uid : options.ipc_allow_uids) {
    const int value = static_cast<int>(uid);
    ok = ok && zmq_setsockopt(socket_, ZMQ_IPC_FILTER_UID, &value, sizeof(value)) == 0;
  }
  for (const uint32_t gid : options.ipc_allow_gids) {
    const int value = static_cast<int>(gid);
    ok = ok && zmq_setsockopt(socket_, ZMQ_IPC_FILTER_GID, &value, sizeof(value)) == 0;
  }
  if (ok) return;
  // A libzmq without the (deprecated) ipc filters: only the file mode keeps others out.
  if ((options.socket_mode & 0007) != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "this libzmq cannot restrict ipc:// peers by uid/gid (" + std::string(zmq_strerror(zmq_errno())) +
                    "), so --socket-mode " + mode_text(options.socket_mode) + " would let every local user use " +
                    options.endpoint + ": pass --socket-mode 0660 or narrower (owner and group only)");
  }
  spdlog::warn("this libzmq cannot restrict ipc:// peers by uid/gid; {} admits whoever its file mode {} admits",
               options.endpoint, mode_text(options.socket_mode));
}

bool ZmqSocket::set_bytes(int option, std::string_view value) {
  if (zmq_setsockopt(socket_, option, value.data(), value.size()) == 0) return true;
  spdlog::debug("zmq_setsockopt({}): {}", option, zmq_strerror(zmq_errno()));
  return false;
}

void ZmqSocket::bind(const ZmqBindOptions& options) {
  const std::string& ep = options.endpoint;
  const bool tcp = ep.rfind("tcp://", 0) == 0;
  const std::string path = ipc_path(ep);
  if (!tcp && path.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "ZeroMQ endpoint '" + ep + "' must start with ipc:// or tcp://");
  }
  if (tcp) {
    if (options.curve_secret_key.size() != 40) {
      throw Error(ErrorCode::kInvalidArgument,
                  "ZeroMQ endpoint " + ep + " is tcp:// but no CURVE key was given: pass "
                  "--curve-secret-key (40-char Z85 secret key, e.g. from zmq_curve_keypair) or use ipc://");
    }
    set_int(ZMQ_CURVE_SERVER, 1);
    if (zmq_setsockopt(socket_, ZMQ_CURVE_SECRETKEY, options.curve_secret_key.data(), 40) != 0) {
      throw Error(ErrorCode::kInvalidArgument, "--curve-secret-key is not a valid Z85 CURVE secret key");
    }
  }
  if (options.max_message_bytes > 0) {
    const int64_t max = options.max_message_bytes;
    if (zmq_setsockopt(socket_, ZMQ_MAXMSGSIZE, &max, sizeof(max)) != 0) throw_zmq("ZMQ_MAXMSGSIZE");
  }
  if (!tcp) apply_ipc_filter(options);
  if (options.adopt_fd >= 0) {
    set_int(ZMQ_USE_FD, options.adopt_fd);
  } else if (!path.empty()) {
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0) make_directories(path.substr(0, slash), 0750);
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
      // A live server answers a plain connect(); a dead one left a stale file behind.
      const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
      const bool live = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
      if (probe >= 0) ::close(probe);
      if (live) {
        throw Error(ErrorCode::kInvalidArgument, "ZeroMQ socket " + path +
                    " is in use by a running server: stop it or pass another endpoint");
      }
      unlink(path.c_str());
    }
  }
  if (zmq_bind(socket_, ep.c_str()) != 0) {
    throw Error(ErrorCode::kIo, "cannot bind ZeroMQ endpoint " + ep + ": " + zmq_strerror(zmq_errno()) +
                                    (path.empty() ? "" : " (is the folder writable?)"));
  }
  endpoint_ = ep;
  if (!path.empty() && options.adopt_fd < 0) {
    unlink_path_ = path;
    if (chmod(path.c_str(), options.socket_mode) != 0) {
      throw Error(ErrorCode::kIo, "cannot chmod " + path + ": " + strerror(errno));
    }
  }

  int fd = -1;
  size_t fd_size = sizeof(fd);
  if (zmq_getsockopt(socket_, ZMQ_FD, &fd, &fd_size) != 0) throw_zmq("ZMQ_FD");
  uv_poll_init(loop_, &poll_, fd);
  uv_idle_init(loop_, &idle_);
  poll_.data = this;
  idle_.data = this;
  handles_open_ = true;
  uv_poll_start(&poll_, UV_READABLE, &ZmqSocket::on_poll);
  schedule_drain();  // messages may already be waiting: the edge could have passed
}

bool ZmqSocket::send(const std::vector<std::string_view>& frames) {
  if (socket_ == nullptr) return false;
  bool ok = true;
  for (size_t i = 0; i < frames.size(); ++i) {
    const int flags = ZMQ_DONTWAIT | (i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
    if (zmq_send(socket_, frames[i].data(), frames[i].size(), flags) < 0) {
      ok = false;  // first frame refused: nothing was queued (ZeroMQ sends multipart atomically)
      break;
    }
  }
  schedule_drain();
  return ok;
}

void ZmqSocket::schedule_drain() {
  if (!handles_open_ || drain_scheduled_) return;
  drain_scheduled_ = true;
  uv_idle_start(&idle_, &ZmqSocket::on_idle);
}

void ZmqSocket::on_idle(uv_idle_t* idle) {
  auto* self = static_cast<ZmqSocket*>(idle->data);
  uv_idle_stop(idle);
  self->drain_scheduled_ = false;
  self->drain();
}

void ZmqSocket::on_poll(uv_poll_t* poll, int /*status*/, int /*events*/) {
  static_cast<ZmqSocket*>(poll->data)->drain();
}

void ZmqSocket::drain() {
  if (draining_ || socket_ == nullptr) return;
  draining_ = true;
  try {
    for (;;) {
      int events = 0;
      size_t size = sizeof(events);
      if (zmq_getsockopt(socket_, ZMQ_EVENTS, &events, &size) != 0 || (events & ZMQ_POLLIN) == 0) break;
      std::vector<std::string> frames;
      for (;;) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, socket_, ZMQ_DONTWAIT) < 0) {
          zmq_msg_close(&msg);
          break;
        }
        frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
        const bool more = zmq_msg_more(&msg) != 0;
        zmq_msg_close(&msg);
        if (!more) break;
      }
      if (frames.empty()) break;
      try {
        on_message_(frames);
      } catch (const std::exception& e) {
        spdlog::error("ZeroMQ message handler: {}", e.what());
      }
      if (socket_ == nullptr) break;  // the handler closed us
    }
  } catch (...) {
    spdlog::error("ZeroMQ drain: unknown exception");
  }
  draining_ = false;
}

void ZmqSocket::close() {
  if (handles_open_) {
    handles_open_ = false;
    uv_poll_stop(&poll_);
    uv_idle_stop(&idle_);
    uv_close(reinterpret_cast<uv_handle_t*>(&poll_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&idle_), nullptr);
  }
  if (socket_ != nullptr) {
    zmq_close(socket_);
    socket_ = nullptr;
  }
  if (!unlink_path_.empty()) {
    unlink(unlink_path_.c_str());
    unlink_path_.clear();
  }
}

}  // namespace vks::server
