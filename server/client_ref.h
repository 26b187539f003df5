#pragma once
// Who sent a request and where its answers go. Requests are known by id; this is how the id's
// owner is reached: a Unix-socket connection id or a ZeroMQ ROUTER peer identity, never a pointer.
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace vks::server {

enum class Transport : uint8_t { kNone, kUds, kZmq, kHttp };

struct ClientRef {
  Transport transport = Transport::kNone;
  uint64_t conn_id = 0;        // kUds / kHttp: connection id
  std::string zmq_identity;    // kZmq: ROUTER routing id
  bool zmq_envelope = false;   // kZmq: the peer is a REQ socket (empty delimiter frame)
  int64_t uid = -1;            // peer credentials (kUds, from SO_PEERCRED); -1 unknown
  int64_t gid = -1;
  int64_t pid = -1;

  std::string describe() const;
};

}  // namespace vks::server
