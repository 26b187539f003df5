#pragma once
// Socket activation: the descriptors systemd (or systemd-socket-activate) passed us, by name.
// Names: "uds" (the Unix stream socket), "router" (ZeroMQ ROUTER ipc socket), "pub" (ZeroMQ XPUB
// ipc socket), "http" (the HTTP front end, TCP or Unix). Any other name, or a name given twice, is a startup error.
#include <optional>
#include <string>
#include <vector>

#include "server/http/handed_listener.h"

namespace vks::server {

struct ListenFds {
  std::optional<int> uds;
  std::optional<int> router;
  std::optional<int> pub;
  std::optional<int> http;  // HTTP front end: a listening TCP or Unix stream socket
  // The --http listeners (and the activated "http" socket) that answered 503 while the model loaded
  // (server/http_loading.h): the front end adopts these instead of binding.
  std::vector<http::HandedListener> http_handed;
  bool activated() const { return uds || router || pub || http; }
};

// Reads $LISTEN_FDS/$LISTEN_FDNAMES (and unsets them). Throws vks::Error on unknown, duplicate or
// unsuitable descriptors (each must be a listening AF_UNIX stream socket).
ListenFds take_listen_fds();

// The filesystem path an AF_UNIX socket is bound to ("" if abstract/unnamed).
std::string unix_socket_path(int fd);

}  // namespace vks::server
