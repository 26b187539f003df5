#pragma once
// The Unix-socket peer policy (--allow-uid/--allow-gid/--deny-uid) as libzmq's ipc accept filter
// (ZMQ_IPC_FILTER_UID/GID: a connecting ipc peer is accepted when its uid is listed, its primary
// gid is listed, or its user is a member of a listed group), so that the ZeroMQ ROUTER and XPUB
// files admit the peers the Unix socket admits, and never one it refuses.
#include <cstdint>
#include <vector>

#include "server/uds_server.h"

namespace vks::server {

struct IpcPeerFilter {
  std::vector<uint32_t> uids;
  std::vector<uint32_t> gids;
  // The filter is narrower than the policy (see ipc_peer_filter): say so at startup.
  bool narrowed = false;
};

// Never empty: an empty libzmq filter would admit everyone. libzmq's filter only allows, so a
// denied uid that an allowed group would admit cannot be expressed with a group entry: then the
// allowed groups are expanded to their users (from the user and group databases, now), minus the
// denied ones, and `narrowed` is set (a process running with an allowed gid but not listed as a
// member is refused on the ZeroMQ endpoints).
IpcPeerFilter ipc_peer_filter(const PeerPolicy& policy);

}  // namespace vks::server
