#include "server/listen_fds.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstring>

#include "engine/common/error.h"

namespace vks::server {

namespace {

void check_listening_unix_stream(int fd, const std::string& name) {
  if (sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "socket-activated descriptor '" + name + "' (fd " + std::to_string(fd) +
                    ") is not a listening AF_UNIX stream socket: use ListenStream=/path in the .socket unit");
  }
}

}  // namespace

std::string unix_socket_path(int fd) {
  sockaddr_un addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sun_family != AF_UNIX) {
    return {};
  }
  if (len <= offsetof(sockaddr_un, sun_path) || addr.sun_path[0] == '\0') return {};
  const size_t n = strnlen(addr.sun_path, len - offsetof(sockaddr_un, sun_path));
  return std::string(addr.sun_path, n);
}

ListenFds take_listen_fds() {
  char** names = nullptr;
  const int n = sd_listen_fds_with_names(1, &names);
  if (n < 0) {
    throw Error(ErrorCode::kIo, std::string("sd_listen_fds_with_names failed: ") + strerror(-n));
  }
  ListenFds fds;
  std::string error;
  for (int i = 0; i < n; ++i) {
    const int fd = SD_LISTEN_FDS_START + i;
    const std::string name = names != nullptr && names[i] != nullptr ? names[i] : "";
    std::optional<int>* slot = nullptr;
    if (name == "uds") slot = &fds.uds;
    if (name == "router") slot = &fds.router;
    if (name == "pub") slot = &fds.pub;
    if (name == "http") slot = &fds.http;
    if (error.empty()) {
      if (slot == nullptr) {
        error = "socket-activated descriptor " + std::to_string(fd) + " has unknown name '" + name +
                "': set FileDescriptorName= to uds, router, pub or http";
      } else if (slot->has_value()) {
        error = "socket-activated descriptor name '" + name + "' given twice (fds " +
                std::to_string(**slot) + " and " + std::to_string(fd) + ")";
      } else {
        *slot = fd;
      }
    }
  }
  if (names != nullptr) {
    for (int i = 0; i < n; ++i) free(names[i]);
    free(names);
  }
  if (!error.empty()) {
    for (int i = 0; i < n; ++i) close(SD_LISTEN_FDS_START + i);
    throw Error(ErrorCode::kInvalidArgument, error);
  }
  if (fds.uds) check_listening_unix_stream(*fds.uds, "uds");
  if (fds.router) check_listening_unix_stream(*fds.router, "router");
  if (fds.pub) check_listening_unix_stream(*fds.pub, "pub");
  return fds;
}

}  // namespace vks::server
