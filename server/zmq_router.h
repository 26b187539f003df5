#pragma once
// The ZeroMQ ROUTER endpoint: DEALER clients send [payload], REQ clients [empty, payload]; both get
// answers (and, for their own streaming requests, events) back with the same envelope.
#include <uv.h>

#include <functional>
#include <memory>
#include <string>

#include "server/client_ref.h"
#include "server/zmq_socket.h"

namespace vks::server {

class ZmqRouter {
 public:
  using Handler = std::function<void(const ClientRef& from, std::string& payload)>;
  ZmqRouter(void* context, uv_loop_t* loop, Handler on_request);
  void bind(const ZmqBindOptions& options) { socket_.bind(options); }
  const std::string& endpoint() const { return socket_.endpoint(); }
  // False when the peer is gone or its queue is at the high-water mark.
  bool send(const ClientRef& to, std::string_view payload);
  void close() { socket_.close(); }

 private:
  void on_message(std::vector<std::string>& frames);
  Handler on_request_;
  ZmqSocket socket_;
};

}  // namespace vks::server
