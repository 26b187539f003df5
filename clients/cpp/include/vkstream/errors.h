#pragma once
// Typed errors of the client library. Every failure is one of these; nothing else is thrown.
#include <stdexcept>
#include <string>

namespace vkstream {

enum class ErrorKind {
  kNotRunning,  // nothing listens at the endpoint: the daemon is not running
  kTransport,   // the connection failed or closed mid-way
  kTimeout,     // no answer within the configured time
  kProtocol,    // the peer sent something the protocol does not allow
  kServer,      // the daemon answered with an `error` message (see ServerError)
  kUsage,       // the caller passed something invalid (checked before sending)
};

class ClientError : public std::runtime_error {
 public:
  ClientError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

// An `error` answer from the daemon: code (docs/PROTOCOL.md lists them), message, and the field,
// request id and retry hint when the daemon gave them.
class ServerError : public ClientError {
 public:
  ServerError(std::string code, const std::string& message, std::string field = {},
              std::string request_id = {}, int64_t retry_after_ms = 0)
      : ClientError(ErrorKind::kServer, code + ": " + message),
        code_(std::move(code)), server_message_(message), field_(std::move(field)),
        request_id_(std::move(request_id)), retry_after_ms_(retry_after_ms) {}
  const std::string& code() const noexcept { return code_; }
  const std::string& server_message() const noexcept { return server_message_; }
  const std::string& field() const noexcept { return field_; }
  const std::string& request_id() const noexcept { return request_id_; }
  int64_t retry_after_ms() const noexcept { return retry_after_ms_; }

 private:
  std::string code_;
  std::string server_message_;
  std::string field_;
  std::string request_id_;
  int64_t retry_after_ms_ = 0;
};

}  // namespace vkstream
