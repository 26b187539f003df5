#include "server/zmq_router.h"

#include <zmq.h>

#include <spdlog/spdlog.h>

#include "protocol/responses.h"

namespace vks::server {

ZmqRouter::ZmqRouter(void* context, uv_loop_t* loop, Handler on_request)
    : on_request_(std::move(on_request)),
      socket_(context, ZMQ_ROUTER, loop, [this](std::vector<std::string>& f) { on_message(f); }) {
  socket_.set_int(ZMQ_ROUTER_MANDATORY, 1);  // report unknown peers / full queues instead of dropping
  socket_.set_int(ZMQ_SNDHWM, 20000);
  socket_.set_int(ZMQ_RCVHWM, 1000);
}

void ZmqRouter::on_message(std::vector<std::string>& frames) {
  ClientRef from;
  from.transport = Transport::kZmq;
  from.zmq_identity = frames[0];
  if (frames.size() == 2) {
    on_request_(from, frames[1]);
  } else if (frames.size() == 3 && frames[1].empty()) {
    from.zmq_envelope = true;
    on_request_(from, frames[2]);
  } else {
    from.zmq_envelope = frames.size() > 2 && frames[1].empty();
    send(from, proto::encode_error(proto::make_error(
                   proto::WireError::kBadFrame, "a ZeroMQ request must be one message frame holding "
                   "one msgpack map (after an optional empty delimiter)")));
  }
}

bool ZmqRouter::send(const ClientRef& to, std::string_view payload) {
  if (to.zmq_envelope) return socket_.send({to.zmq_identity, std::string_view(), payload});
  return socket_.send({to.zmq_identity, payload});
}

}  // namespace vks::server
