#include "server/ipc_peer_filter.h"

#include <unistd.h>

namespace vks::server {

IpcPeerFilter ipc_peer_filter(const PeerPolicy& policy) {
  IpcPeerFilter filter;
  if (policy.allow_uids.empty() && policy.allow_gids.empty()) {
    filter.uids = {static_cast<uint32_t>(getuid()), 0u};
    return filter;
  }
  filter.uids = policy.allow_uids;
  filter.gids = policy.allow_gids;
  return filter;
}

}  // namespace vks::server
