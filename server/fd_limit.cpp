#include "server/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>

namespace vks::server {

uint64_t raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(lim.rlim_cur);
}

uint64_t reserved_fds(uint64_t fd_limit) { return std::clamp<uint64_t>(fd_limit / 4, 32, 512); }

ConnectionCaps fit_connection_caps(uint64_t fd_limit, uint32_t http_wanted, uint32_t uds_wanted) {
  ConnectionCaps caps{http_wanted, uds_wanted, {}};
  const uint64_t reserve = reserved_fds(fd_limit);
  const uint64_t room = fd_limit > reserve ? fd_limit - reserve : 0;
  if (uint64_t{http_wanted} + uds_wanted <= room) return caps;
  const uint64_t http_room = std::max<uint64_t>(room / 2, room > uds_wanted ? room - uds_wanted : 0);
  caps.http = static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(http_wanted, http_room)));
  caps.uds = static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(uds_wanted, room > caps.http ? room - caps.http : 0)));
  caps.note = "the open-file limit is " + std::to_string(fd_limit) + " (" + std::to_string(reserve) +
              " kept for the model, devices and other sockets): HTTP connections capped at " + std::to_string(caps.http) +
              " (wanted " + std::to_string(http_wanted) + "), Unix-socket connections at " + std::to_string(caps.uds) +
              " (wanted " + std::to_string(uds_wanted) + "); raise LimitNOFILE= or `ulimit -n` for more";
  return caps;
}

}  // namespace vks::server
