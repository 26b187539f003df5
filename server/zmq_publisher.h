#pragma once
// The ZeroMQ XPUB endpoint. Every event of every request is published as [topic, event]. In
// ZMQ_XPUB_MANUAL mode every subscription message reaches us and takes effect only when we apply
// it: a new subscriber to a live or retained request's topic is subscribed and on_subscribe
// re-publishes that stream from seq 0 in the same loop-thread step, so no live event of that topic
// can reach the new subscriber before its catch-up (with automatic subscriptions, libzmq applies
// one inside any send, and live events overtook the catch-up). Other subscribers of the same
// topic receive the catch-up again and drop it by seq.
#include <uv.h>

#include <functional>
#include <string>
#include <unordered_map>

#include "server/zmq_socket.h"

namespace vks::server {

class ZmqPublisher {
 public:
  using SubscribeHandler = std::function<void(const std::string& topic)>;
  ZmqPublisher(void* context, uv_loop_t* loop, SubscribeHandler on_subscribe);
  void bind(const ZmqBindOptions& options) { socket_.bind(options); }
  const std::string& endpoint() const { return socket_.endpoint(); }
  void publish(std::string_view topic, std::string_view payload);
  int32_t subscriptions() const { return subscriptions_; }
  void close() { socket_.close(); }

 private:
  void on_message(std::vector<std::string>& frames);
  SubscribeHandler on_subscribe_;
  ZmqSocket socket_;
  int32_t subscriptions_ = 0;
};

}  // namespace vks::server
