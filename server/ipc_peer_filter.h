#pragma once
// The Unix-socket peer policy (--allow-uid/--allow-gid) as libzmq's ipc accept filter
// (ZMQ_IPC_FILTER_UID/GID: a connecting ipc peer is accepted when its uid is listed, its primary
// gid is listed, or it is a member of a listed group), so that the ZeroMQ ROUTER and XPUB files
// admit exactly the peers the Unix socket admits.
#include <cstdint>
#include <vector>

#include "server/uds_server.h"

namespace vks::server {

struct IpcPeerFilter {
  std::vector<uint32_t> uids;
  std::vector<uint32_t> gids;
};

// Never empty: an empty libzmq filter would admit everyone.
IpcPeerFilter ipc_peer_filter(const PeerPolicy& policy);

}  // namespace vks::server
