#pragma once
// A blocking msgpack client of vkstreamd's Unix socket for the benches that talk to a daemon they
// started (ipc_bench, cross_model_latency): framed sends, one parsed server message per recv().
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "protocol/frame.h"
#include "protocol/protocol.h"

namespace vks::bench {

class UdsConn {
 public:
  explicit UdsConn(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    ok_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~UdsConn() { close(fd_); }
  UdsConn(const UdsConn&) = delete;
  UdsConn& operator=(const UdsConn&) = delete;
  bool ok() const { return ok_; }
  void send(std::string_view payload) {
    std::string frame;
    proto::append_frame(frame, payload);
    size_t off = 0;
    while (off < frame.size()) {
      const ssize_t n = ::send(fd_, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      off += static_cast<size_t>(n);
    }
  }
  // last_buffered(): the message was already in the buffer of an earlier read, i.e. the daemon wrote
  // it together with the one before; its arrival time then says nothing about when it was made.
  bool last_buffered() const { return buffered_; }
  proto::ServerMessage recv() {
    std::string payload;
    buffered_ = true;
    while (!decoder_.next(payload)) {
      buffered_ = false;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) throw std::runtime_error("connection closed");
      decoder_.feed(std::string_view(buf, static_cast<size_t>(n)));
    }
    auto m = proto::parse_server_message(payload);
    if (!m) throw std::runtime_error("bad server message");
    return std::move(*m);
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  bool buffered_ = false;
  proto::FrameDecoder decoder_{1u << 24};
};

}  // namespace vks::bench
