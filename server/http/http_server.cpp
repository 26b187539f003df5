#include "server/http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <utility>

#include "engine/common/error.h"

namespace vks::http {

namespace {

std::string sockaddr_text(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "unix";
}

bool unix_socket_answers(const std::string& path) {
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

HttpServer::HttpServer(uv_loop_t* loop, const HttpLimits& limits, Hooks hooks)
    : loop_(loop), limits_(limits), hooks_(std::move(hooks)) {
  uv_timer_init(loop_, &housekeeping_);
  housekeeping_.data = this;
  timer_open_ = true;
  // Often enough that a timeout is enforced within a quarter of its length (at most each second).
  const uint64_t tick = std::clamp<uint64_t>(std::min(limits_.request_timeout_ms, limits_.keep_alive_idle_ms) / 4, 20, 1000);
  uv_timer_start(&housekeeping_, &HttpServer::on_housekeeping, tick, tick);
}

HttpServer::~HttpServer() = default;

HttpServer::Listener& HttpServer::add_listener(bool is_tcp) {
  auto l = std::make_unique<Listener>();
  l->server = this;
  l->is_tcp = is_tcp;
  l->handle.handle.data = l.get();
  if (is_tcp) {
    uv_tcp_init(loop_, &l->handle.tcp);
  } else {
    uv_pipe_init(loop_, &l->handle.pipe, 0);
  }
  listeners_.push_back(std::move(l));
  return *listeners_.back();
}

void HttpServer::start_listening(Listener& l) {
  const int rc = uv_listen(&l.handle.stream, 512, &HttpServer::on_connection);
  if (rc != 0) throw Error(ErrorCode::kIo, "cannot listen on " + l.address + ": " + uv_strerror(rc));
}

void HttpServer::listen(const HttpEndpoint& endpoint, uint32_t unix_mode) {
  if (endpoint.is_unix) {
    const std::string& path = endpoint.path;
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        throw Error(ErrorCode::kInvalidArgument, path + " exists and is not a socket: remove it or pass another --http unix:PATH");
      }
      if (unix_socket_answers(path)) {
        throw Error(ErrorCode::kInvalidArgument, "HTTP socket " + path + " is in use by a running server");
      }
      unlink(path.c_str());
    }
    // Bound here, not with uv_pipe_bind: libuv would remove the file when the handle closes, also
    // when the listening socket lives on in another owner (hand_over_listeners).
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) {
      throw Error(ErrorCode::kInvalidArgument, "HTTP socket path " + path + " is longer than a Unix socket path may be");
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw Error(ErrorCode::kIo, std::string("socket(): ") + strerror(errno));
    if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      const int err = errno;
      close(fd);
      throw Error(ErrorCode::kIo, "cannot bind HTTP socket " + path + ": " + strerror(err));
    }
    Listener& l = add_listener(false);
    l.address = "unix:" + path;
    l.unlink_path = path;
    if (const int rc = uv_pipe_open(&l.handle.pipe, fd); rc != 0) {
      close(fd);
      throw Error(ErrorCode::kIo, "cannot open HTTP socket " + path + ": " + uv_strerror(rc));
    }
    if (chmod(path.c_str(), unix_mode) != 0) {
      throw Error(ErrorCode::kIo, "cannot chmod " + path + ": " + strerror(errno));
    }
    start_listening(l);
    return;
  }
  sockaddr_storage addr{};
  const std::string host = endpoint.host == "localhost" ? "127.0.0.1" : endpoint.host;
  int rc = uv_ip4_addr(host.c_str(), endpoint.port, reinterpret_cast<sockaddr_in*>(&addr));
  if (rc != 0) rc = uv_ip6_addr(host.c_str(), endpoint.port, reinterpret_cast<sockaddr_in6*>(&addr));
  if (rc != 0) {
    throw Error(ErrorCode::kInvalidArgument, "--http: '" + endpoint.host + "' is not a numeric IPv4/IPv6 address or localhost");
  }
  Listener& l = add_listener(true);
  rc = uv_tcp_bind(&l.handle.tcp, reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0) {
    sockaddr_storage bound{};
    int len = sizeof(bound);
    uv_tcp_getsockname(&l.handle.tcp, reinterpret_cast<sockaddr*>(&bound), &len);
    l.address = "http://" + sockaddr_text(bound);
  } else {
    l.address = endpoint.describe();
  }
  if (rc != 0) throw Error(ErrorCode::kIo, "cannot bind " + l.address + ": " + uv_strerror(rc));
  start_listening(l);  // bind errors such as EADDRINUSE surface here with libuv
}

void HttpServer::adopt(int fd, std::string unlink_path) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    throw Error(ErrorCode::kIo, std::string("cannot inspect the 'http' listening descriptor: ") + strerror(errno));
  }
  const bool is_tcp = ss.ss_family == AF_INET || ss.ss_family == AF_INET6;
  Listener& l = add_listener(is_tcp);
  const int rc = is_tcp ? uv_tcp_open(&l.handle.tcp, fd) : uv_pipe_open(&l.handle.pipe, fd);
  if (rc != 0) {
    throw Error(ErrorCode::kIo, std::string("cannot adopt the 'http' listening descriptor: ") + uv_strerror(rc));
  }
  l.unlink_path = std::move(unlink_path);
  if (is_tcp) {
    l.address = "http://" + sockaddr_text(ss);
  } else {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&ss);
    l.address = "unix:" + std::string(un->sun_path, strnlen(un->sun_path, sizeof(un->sun_path)));
  }
  start_listening(l);
}

std::vector<HandedListener> HttpServer::hand_over_listeners() {
  std::vector<HandedListener> out;
  std::vector<Listener*> from;
  for (auto& l : listeners_) {
    uv_os_fd_t fd = -1;
    if (uv_is_closing(&l->handle.handle) || uv_fileno(&l->handle.handle, &fd) != 0) continue;
    HandedListener h;
    h.fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (h.fd < 0) {
      const int err = errno;
      for (const HandedListener& done : out) close(done.fd);
      throw Error(ErrorCode::kIo, "cannot duplicate the listener of " + l->address + ": " + strerror(err));
    }
    out.push_back(std::move(h));
    from.push_back(l.get());
  }
  // Only once every descriptor is duplicated: on failure this server still owns its files.
  for (size_t i = 0; i < out.size(); ++i) out[i].unlink_path = std::exchange(from[i]->unlink_path, {});
  return out;
}

std::vector<std::string> HttpServer::addresses() const {
  std::vector<std::string> out;
  for (const auto& l : listeners_) out.push_back(l->address);
  return out;
}

uint16_t HttpServer::tcp_port() const {
  for (const auto& l : listeners_) {
    if (!l->is_tcp) continue;
    sockaddr_storage ss{};
    int len = sizeof(ss);
    if (uv_tcp_getsockname(&l->handle.tcp, reinterpret_cast<sockaddr*>(&ss), &len) != 0) continue;
    if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  }
  return 0;
}

void HttpServer::on_connection(uv_stream_t* listener, int status) {
  auto* l = static_cast<Listener*>(listener->data);
  if (status != 0) {
    spdlog::warn("http accept on {}: {}", l->address, uv_strerror(status));
    return;
  }
  try {
    l->server->accept_one(*l);
  } catch (const std::exception& e) {
    spdlog::error("http accept: {}", e.what());
  } catch (...) {
    spdlog::error("http accept: unknown exception");
  }
}

void HttpServer::accept_one(Listener& listener) {
  const uint64_t id = next_id_++;
  const bool over_limit = connections_.size() >= limits_.max_connections;
  auto conn = std::make_unique<HttpConnection>(
      id, listener.is_tcp, limits_,
      [this](HttpConnection& c, HttpRequest& r) { hooks_.on_request(c, r); },
      [this](HttpConnection& c) {
        const uint64_t cid = c.id();
        if (hooks_.on_closed) hooks_.on_closed(c);
        connections_.erase(cid);  // deletes c
      });
  if (listener.is_tcp) {
    uv_tcp_init(loop_, reinterpret_cast<uv_tcp_t*>(conn->handle()));
  } else {
    uv_pipe_init(loop_, reinterpret_cast<uv_pipe_t*>(conn->handle()), 0);
  }
  HttpConnection& c = *conn;
  connections_.emplace(id, std::move(conn));
  if (uv_accept(&listener.handle.stream, c.stream()) != 0) {
    c.close_now();
    return;
  }
  PeerInfo peer;
  peer.is_unix = !listener.is_tcp;
  if (listener.is_tcp) {
    uv_tcp_nodelay(reinterpret_cast<uv_tcp_t*>(c.handle()), 1);  // small SSE chunks go out at once
    sockaddr_storage ss{};
    int len = sizeof(ss);
    if (uv_tcp_getpeername(reinterpret_cast<uv_tcp_t*>(c.handle()), reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      peer.address = sockaddr_text(ss);
    }
  } else {
    peer.address = "unix";
    uv_os_fd_t fd = -1;
    socklen_t len = sizeof(peer.cred);
    if (uv_fileno(c.handle(), &fd) != 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer.cred, &len) != 0) {
      spdlog::warn("http connection {}: cannot read peer credentials; refusing it", id);
      c.close_now();
      return;
    }
    peer.address = "unix pid " + std::to_string(peer.cred.pid) + " uid " + std::to_string(peer.cred.uid);
  }
  c.set_peer(peer);
  if (over_limit) {
    spdlog::warn("http connection {} ({}): {} connections open, the limit: answering 503", id, peer.address,
                 limits_.max_connections);
    c.refuse(503, "too many open HTTP connections (limit " + std::to_string(limits_.max_connections) +
                      "); retry later", "too_many_connections");
    return;
  }
  std::string why;
  if (hooks_.allow_peer && !hooks_.allow_peer(peer, why)) {
    spdlog::warn("http connection {} ({}): refused: {}", id, peer.address, why);
    c.refuse(403, why, "forbidden");
    return;
  }
  c.start_reading();
}

void HttpServer::on_housekeeping(uv_timer_t* timer) {
  auto* self = static_cast<HttpServer*>(timer->data);
  try {
    const auto now = std::chrono::steady_clock::now();
    std::vector<HttpConnection*> all;
    all.reserve(self->connections_.size());
    for (auto& [id, c] : self->connections_) all.push_back(c.get());
    for (HttpConnection* c : all) c->expire(now);  // closes are deferred: pointers stay valid
  } catch (const std::exception& e) {
    spdlog::error("http housekeeping: {}", e.what());
  }
}

void HttpServer::stop_accepting() {
  for (auto& l : listeners_) {
    if (uv_is_closing(&l->handle.handle)) continue;
    uv_close(&l->handle.handle, nullptr);
    if (!l->unlink_path.empty()) {
      unlink(l->unlink_path.c_str());
      l->unlink_path.clear();
    }
  }
  if (timer_open_) {
    timer_open_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&housekeeping_), nullptr);
  }
}

void HttpServer::close_all(bool flush) {
  std::vector<HttpConnection*> all;
  all.reserve(connections_.size());
  for (auto& [id, c] : connections_) all.push_back(c.get());
  for (HttpConnection* c : all) {
    if (flush) {
      c->close_after_flush();
    } else {
      c->close_now();
    }
  }
}

HttpConnection* HttpServer::find(uint64_t id) {
  auto it = connections_.find(id);
  return it == connections_.end() ? nullptr : it->second.get();
}

}  // namespace vks::http
