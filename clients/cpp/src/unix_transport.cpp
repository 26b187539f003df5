#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clients/cpp/src/transport.h"
#include "protocol/frame.h"
#include "vkstream/errors.h"

namespace vkstream::detail {

std::string not_running_hint(const std::string& path) {
  const bool system_scope = path.find("/run/vkstream/") != std::string::npos;
  return std::string("start it with `vkstreamd --model FILE.gguf` or `") +
         (system_scope ? "sudo systemctl start vkstream.socket" : "systemctl --user start vkstream.socket") + "`";
}

std::string not_running_hint() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  return not_running_hint(runtime != nullptr && *runtime != '\0' ? std::string(runtime) : std::string("/run/vkstream/"));
}

namespace {

class UnixTransport final : public Transport {
 public:
  UnixTransport(int fd, std::string path, uint32_t max_frame_bytes)
      : fd_(fd), path_(std::move(path)), decoder_(max_frame_bytes) {}
  ~UnixTransport() override { ::close(fd_); }
  UnixTransport(const UnixTransport&) = delete;
  UnixTransport& operator=(const UnixTransport&) = delete;

  void send(std::string_view payload) override {
    std::string frame;
    vks::proto::append_frame(frame, payload);
    size_t done = 0;
    while (done < frame.size()) {
      const ssize_t n = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw ClientError(ErrorKind::kTransport, "lost the connection to vkstreamd at " + path_ + ": " + std::strerror(errno));
      }
      done += static_cast<size_t>(n);
    }
  }

  std::optional<std::string> receive(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string payload;
    for (;;) {
      if (decoder_.next(payload)) return payload;
      if (decoder_.failed()) {
        throw ClientError(ErrorKind::kProtocol, "bad frame from vkstreamd: " + decoder_.error().message);
      }
      if (closed_) throw ClientError(ErrorKind::kTransport, "vkstreamd closed the connection (" + path_ + ")");
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
      if (r < 0) {
        if (errno == EINTR) continue;
        throw ClientError(ErrorKind::kTransport, std::string("poll failed: ") + std::strerror(errno));
      }
      if (r == 0) return std::nullopt;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        throw ClientError(ErrorKind::kTransport, "lost the connection to vkstreamd at " + path_ + ": " + std::strerror(errno));
      }
      if (n == 0) {
        closed_ = true;  // deliver what is already decoded first
        continue;
      }
      decoder_.feed(std::string_view(buf, static_cast<size_t>(n)));
    }
  }

  std::string describe() const override { return "unix:" + path_; }

 private:
  int fd_;
  std::string path_;
  vks::proto::FrameDecoder decoder_;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<Transport> connect_unix_transport(const std::string& path, uint32_t max_frame_bytes) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    throw ClientError(ErrorKind::kUsage, "invalid Unix socket path '" + path + "' (empty or longer than " +
                                             std::to_string(sizeof addr.sun_path - 1) + " bytes)");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw ClientError(ErrorKind::kTransport, std::string("socket() failed: ") + std::strerror(errno));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == ENOENT || err == ECONNREFUSED) {
      throw ClientError(ErrorKind::kNotRunning,
                        "vkstreamd is not running (nothing listens at " + path + "): " + not_running_hint(path));
    }
    throw ClientError(ErrorKind::kTransport, "cannot connect to " + path + ": " + std::strerror(err));
  }
  return std::make_unique<UnixTransport>(fd, path, max_frame_bytes);
}

}  // namespace vkstream::detail
