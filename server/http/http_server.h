#pragma once
// The HTTP listeners (TCP and/or Unix socket, bound here or adopted from systemd) and their
// connections, on the daemon's libuv loop. Past max_connections a new connection gets 503 and is
// closed; peers a policy refuses (Unix sockets: uid/gid) get 403. A one-second housekeeping timer
// closes idle keep-alive connections and requests that never complete.
#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/http/handed_listener.h"
#include "server/http/http_connection.h"
#include "server/http/http_endpoint.h"
#include "server/http/http_limits.h"

namespace vks::http {

class HttpServer {
 public:
  struct Hooks {
    std::function<void(HttpConnection&, HttpRequest&)> on_request;
    std::function<void(HttpConnection&)> on_closed;  // right before deletion
    // Optional: may this peer connect? Set `why` when not (answered with 403).
    std::function<bool(const PeerInfo&, std::string& why)> allow_peer;
  };

  HttpServer(uv_loop_t* loop, const HttpLimits& limits, Hooks hooks);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens (unix: replaces a stale socket file, chmods to `mode`). Throws vks::Error.
  void listen(const HttpEndpoint& endpoint, uint32_t unix_mode = 0660);
  // Adopts a listening socket passed by systemd (TCP or Unix, told apart by its address family),
  // or handed over by another server (HandedListener: its socket file is removed at stop_accepting).
  void adopt(int fd, std::string unlink_path = {});
  // Duplicates every listener's descriptor for a next owner, who also takes over removing the
  // socket files this server created. This server still listens until stop_accepting (call it
  // before, or on, the loop thread).
  std::vector<HandedListener> hand_over_listeners();
  // The actual addresses ("http://127.0.0.1:41234", "unix:/run/..."), after listen/adopt.
  std::vector<std::string> addresses() const;
  // The TCP port of the first TCP listener (0 if none): tests listen on port 0.
  uint16_t tcp_port() const;

  void stop_accepting();            // closes the listeners (and unlinks socket files we created)
  void close_all(bool flush);       // every connection
  HttpConnection* find(uint64_t id);
  size_t connection_count() const { return connections_.size(); }
  const HttpLimits& limits() const { return limits_; }

 private:
  struct Listener {
    HttpServer* server = nullptr;
    uv_any_handle handle{};
    bool is_tcp = true;
    std::string address;
    std::string unlink_path;  // unix socket file we created
  };
  static void on_connection(uv_stream_t* listener, int status);
  static void on_housekeeping(uv_timer_t* timer);
  void accept_one(Listener& listener);
  Listener& add_listener(bool is_tcp);
  void start_listening(Listener& l);

  uv_loop_t* loop_;
  HttpLimits limits_;
  Hooks hooks_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  uv_timer_t housekeeping_{};
  bool timer_open_ = false;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<HttpConnection>> connections_;
};

}  // namespace vks::http
