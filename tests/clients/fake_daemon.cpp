#include "tests/clients/fake_daemon.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "clients/cpp/src/wire.h"
#include "protocol/frame.h"

namespace vks::test {

FakeDaemon::FakeDaemon(Handler handler) : handler_(std::move(handler)) {
  char tmpl[] = "/tmp/vks-fake-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  path_ = dir_ + "/fake.sock";
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 4) != 0) {
    throw std::runtime_error("bind/listen failed");
  }
  thread_ = std::thread([this] { serve(); });
}

FakeDaemon::~FakeDaemon() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
  ::unlink(path_.c_str());
  ::rmdir(dir_.c_str());
}

void FakeDaemon::serve() {
  while (!stop_) {
    pollfd lp{listen_fd_, POLLIN, 0};
    if (::poll(&lp, 1, 50) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    proto::FrameDecoder decoder(1u << 20);
    bool open = true;
    while (open && !stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      decoder.feed(std::string_view(buf, static_cast<size_t>(n)));
      std::string payload;
      while (open && decoder.next(payload)) {
        const vkstream::Value request = vkstream::detail::unpack_value(payload);
        std::string out;
        for (const vkstream::Value& reply : handler_(request)) {
          if (reply.as_string() != nullptr && *reply.as_string() == "<close>") {
            open = false;
            break;
          }
          if (const std::string* s = reply.as_string(); s != nullptr && s->rfind("<pause ", 0) == 0) {
            if (!out.empty() && ::send(fd, out.data(), out.size(), MSG_NOSIGNAL) < 0) open = false;
            out.clear();
            std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(s->substr(7))));
            continue;
          }
          proto::append_frame(out, vkstream::detail::pack_value(reply));
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          out += raw_reply_;
          raw_reply_.clear();
        }
        if (!out.empty() && ::send(fd, out.data(), out.size(), MSG_NOSIGNAL) < 0) open = false;
      }
    }
    ::close(fd);
  }
}

}  // namespace vks::test
