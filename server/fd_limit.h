#pragma once
// File descriptors: each HTTP or Unix-socket connection holds one, and the soft RLIMIT_NOFILE is
// often 1024 while --http-max-connections alone defaults to 1024. Past the limit accept() fails:
// HTTP clients got a reset instead of the documented 503, msgpack clients EPIPE. So the daemon
// raises the soft limit to the hard one at start, and sizes its connection caps to what is left
// after the descriptors everything else needs.
#include <cstdint>
#include <string>

namespace vks::server {

// Raises RLIMIT_NOFILE's soft limit to its hard limit (systemd's LimitNOFILE=, `ulimit -Hn`).
// Returns the soft limit in force afterwards (RLIM_INFINITY as UINT64_MAX).
uint64_t raise_fd_limit();

// Descriptors kept for what is not a client connection: the model file, the GPU driver, listeners,
// ZeroMQ's sockets and their peers, logs. A quarter of the limit, at least 32, at most 512.
uint64_t reserved_fds(uint64_t fd_limit);

struct ConnectionCaps {
  uint32_t http = 0;
  uint32_t uds = 0;
  std::string note;  // what was lowered and why (empty when the wanted caps fit)
};

// The caps to use under `fd_limit`: the wanted ones when they fit beside reserved_fds(), else
// lowered (HTTP first to half of what is left, the Unix socket the rest), each at least 1.
ConnectionCaps fit_connection_caps(uint64_t fd_limit, uint32_t http_wanted, uint32_t uds_wanted);

}  // namespace vks::server
