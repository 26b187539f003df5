#include "server/zmq_publisher.h"

#include <zmq.h>

#include <spdlog/spdlog.h>

namespace vks::server {

ZmqPublisher::ZmqPublisher(void* context, uv_loop_t* loop, SubscribeHandler on_subscribe)
    : on_subscribe_(std::move(on_subscribe)),
      socket_(context, ZMQ_XPUB, loop, [this](std::vector<std::string>& f) { on_message(f); }) {
  socket_.set_int(ZMQ_XPUB_VERBOSE, 1);
  // A subscriber that falls this far behind loses events (PUB semantics); it fills gaps with replay.
  socket_.set_int(ZMQ_SNDHWM, 100000);
}

void ZmqPublisher::on_message(std::vector<std::string>& frames) {
  const std::string& m = frames[0];
  if (m.empty()) return;
  const std::string topic = m.substr(1);
  if (m[0] == 1) {
    ++subscriptions_;
    spdlog::debug("PUB subscription to '{}'", topic);
    if (!topic.empty()) on_subscribe_(topic);
  } else if (m[0] == 0) {
    if (subscriptions_ > 0) --subscriptions_;
  }
}

void ZmqPublisher::publish(std::string_view topic, std::string_view payload) {
  socket_.send({topic, payload});
}

}  // namespace vks::server
