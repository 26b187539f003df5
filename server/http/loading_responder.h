#pragma once
// vkstreamd's HTTP listeners while the model loads (which may take many seconds): bound before the
// load and answered on a loop of their own (one thread) with 503 "loading" — GET /health
// {"status":"loading"}, every other request the JSON error of its API — each answer closing its
// connection. hand_over() then stops answering and gives the still-listening sockets to the front
// end, so a client never sees "connection refused" and connections waiting in the backlog are
// served by the real front end.
#include <uv.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/http/handed_listener.h"
#include "server/http/http_endpoint.h"
#include "server/http/http_limits.h"
#include "server/http/http_server.h"

namespace vks::http {

struct LoadingResponderOptions {
  std::vector<HttpEndpoint> endpoints;  // bound here (unix: created with unix_mode)
  std::optional<int> activated_fd;      // a socket-activated listener, adopted (owned from then on)
  uint32_t unix_mode = 0660;
  HttpLimits limits;
  // May this peer connect? Set `why` when not (answered 403, as by the front end).
  std::function<bool(const PeerInfo&, std::string& why)> allow_peer;
};

// GET /health -> 503 {"status":"loading"}; /api/* -> 503 {"error":"Loading model"}; anything else
// -> 503 in OpenAI's error shape (code "model_loading"). Retry-After: 1, Connection: close.
HttpResponse loading_answer(const HttpRequest& request);

class LoadingResponder {
 public:
  // Binds every endpoint, adopts the activated descriptor, and starts answering on its thread.
  // Throws vks::Error (bind failures), having closed everything it opened.
  explicit LoadingResponder(LoadingResponderOptions options);
  // Stops answering; sockets not handed over are closed (and their files removed).
  ~LoadingResponder();
  LoadingResponder(const LoadingResponder&) = delete;
  LoadingResponder& operator=(const LoadingResponder&) = delete;

  std::vector<std::string> addresses() const { return addresses_; }
  uint16_t tcp_port() const { return tcp_port_; }

  // Stops accepting, gives the connections it accepted a short window (250 ms) in which a request
  // still arriving is answered 503 "loading" (every answer closes its connection), closes the rest,
  // closes its loop, and returns the listening sockets, still listening.
  std::vector<HandedListener> hand_over();

 private:
  static void on_stop(uv_async_t* async);
  static void on_final_tick(uv_timer_t* timer);
  void stop();           // idempotent: the thread is joined and the loop closed afterwards
  void close_handles();  // on the loop thread (or before it runs)

  uv_loop_t loop_{};
  uv_async_t stop_async_{};
  uv_timer_t final_timer_{};
  std::chrono::steady_clock::time_point final_started_{};
  std::unique_ptr<HttpServer> server_;
  std::vector<HandedListener> handed_;  // duplicates of the listeners, still listening
  std::vector<std::string> addresses_;
  uint16_t tcp_port_ = 0;
  std::thread thread_;
  bool loop_open_ = false;
};

}  // namespace vks::http
