#pragma once
// One connection to the daemon carrying whole messages (msgpack map payloads): the Unix socket
// with its 4-byte length framing, or a ZeroMQ DEALER socket (one message part per map).
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace vkstream::detail {

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends one payload. Throws ClientError(kTransport) when the connection is gone.
  virtual void send(std::string_view payload) = 0;
  // The next payload, or nullopt after `timeout`. Throws ClientError(kTransport) on close/failure
  // and kProtocol on a malformed frame.
  virtual std::optional<std::string> receive(std::chrono::milliseconds timeout) = 0;
  virtual std::string describe() const = 0;  // for messages: "unix:/path" or the ZeroMQ endpoint
};

// Throws ClientError(kNotRunning) when no daemon listens at the path.
std::unique_ptr<Transport> connect_unix_transport(const std::string& path, uint32_t max_frame_bytes);
// ZeroMQ connects lazily: for ipc:// endpoints a missing socket file is reported as kNotRunning.
std::unique_ptr<Transport> connect_zmq_transport(const std::string& endpoint);

// Hint printed with kNotRunning errors, naming the systemctl scope that serves `path`: the system
// instance for paths under /run/vkstream, the user instance otherwise (without a path: the scope
// the default endpoints use, i.e. user when XDG_RUNTIME_DIR is set).
std::string not_running_hint();
std::string not_running_hint(const std::string& path);

}  // namespace vkstream::detail
