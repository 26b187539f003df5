#include "server/zmq_publisher.h"

#include <zmq.h>

#include <spdlog/spdlog.h>

namespace vks::server {

ZmqPublisher::ZmqPublisher(void* context, uv_loop_t* loop, SubscribeHandler on_subscribe)
    : on_subscribe_(std::move(on_subscribe)),
      socket_(context, ZMQ_XPUB, loop, [this](std::vector<std::string>& f) { on_message(f); }) {
  socket_.set_int(ZMQ_XPUB_VERBOSE, 1);
  socket_.set_int(ZMQ_XPUB_MANUAL, 1);  // we apply each subscription: see the header
  // A subscriber that falls this far behind loses events (PUB semantics); it fills gaps with replay.
  socket_.set_int(ZMQ_SNDHWM, 100000);
}

void ZmqPublisher::on_message(std::vector<std::string>& frames) {
  const std::string& m = frames[0];
  if (m.empty()) return;
  const std::string topic = m.substr(1);
  // Applies to the subscriber that sent this message (the last one received): right now, before
  // any other message is received or published.
  if (m[0] == 1) {
    socket_.set_bytes(ZMQ_SUBSCRIBE, topic);
    ++subscriptions_;
    spdlog::debug("PUB subscription to '{}'", topic);
    if (!topic.empty()) on_subscribe_(topic);
  } else if (m[0] == 0) {
    socket_.set_bytes(ZMQ_UNSUBSCRIBE, topic);
    if (subscriptions_ > 0) --subscriptions_;
  }
}

void ZmqPublisher::publish(std::string_view topic, std::string_view payload) {
  socket_.send({topic, payload});
}

}  // namespace vks::server
