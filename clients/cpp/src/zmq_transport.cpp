#include <sys/stat.h>

#include <zmq.hpp>

#include "clients/cpp/src/transport.h"
#include "vkstream/errors.h"

namespace vkstream::detail {
namespace {

class ZmqTransport final : public Transport {
 public:
  explicit ZmqTransport(const std::string& endpoint) : socket_(context_, zmq::socket_type::dealer), endpoint_(endpoint) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }

  void send(std::string_view payload) override {
    try {
      socket_.send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      throw ClientError(ErrorKind::kTransport, "ZeroMQ send to " + endpoint_ + " failed: " + e.what());
    }
  }

  std::optional<std::string> receive(std::chrono::milliseconds timeout) override {
    try {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, timeout) == 0) return std::nullopt;
      // A ROUTER answering REQ-style adds an empty delimiter part: the map is the last part.
      std::string payload;
      for (;;) {
        zmq::message_t part;
        if (!socket_.recv(part, zmq::recv_flags::none)) return std::nullopt;
        payload.assign(static_cast<const char*>(part.data()), part.size());
        if (!part.more()) break;
      }
      return payload;
    } catch (const zmq::error_t& e) {
      throw ClientError(ErrorKind::kTransport, "ZeroMQ receive from " + endpoint_ + " failed: " + e.what());
    }
  }

  std::string describe() const override { return endpoint_; }

 private:
  zmq::context_t context_;
  zmq::socket_t socket_;
  std::string endpoint_;
};

}  // namespace

std::unique_ptr<Transport> connect_zmq_transport(const std::string& endpoint) {
  constexpr std::string_view kIpc = "ipc://";
  if (endpoint.rfind(kIpc, 0) == 0) {
    // ZeroMQ would wait forever for an ipc peer that does not exist; say so at once instead.
    struct stat st{};
    const std::string path = endpoint.substr(kIpc.size());
    if (::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      throw ClientError(ErrorKind::kNotRunning,
                        "vkstreamd is not running (no socket at " + endpoint + "): " + not_running_hint(path));
    }
  }
  try {
    return std::make_unique<ZmqTransport>(endpoint);
  } catch (const zmq::error_t& e) {
    throw ClientError(ErrorKind::kUsage, "invalid ZeroMQ endpoint '" + endpoint + "': " + e.what());
  }
}

}  // namespace vkstream::detail
