#pragma once
// A listening socket passed from one owner to the next without ever being closed (vkstreamd's
// loading responder to its HTTP front end), so connections waiting in its backlog are kept and a
// client never sees "connection refused" in between.
#include <string>

namespace vks::http {

struct HandedListener {
  int fd = -1;              // a listening TCP or Unix stream socket, owned by the receiver
  std::string unlink_path;  // the Unix socket file vkstreamd created: removed when it stops listening
};

}  // namespace vks::http
