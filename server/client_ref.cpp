#include "server/client_ref.h"

namespace vks::server {

std::string ClientRef::describe() const {
  switch (transport) {
    case Transport::kUds:
      return "uds#" + std::to_string(conn_id) + " pid " + std::to_string(pid) + " uid " +
             std::to_string(uid) + " gid " + std::to_string(gid);
    case Transport::kZmq: {
      static constexpr char kHex[] = "0123456789abcdef";
      std::string hex;
      for (unsigned char ch : zmq_identity) {
        hex += kHex[ch >> 4];
        hex += kHex[ch & 15];
      }
      return "zmq peer " + hex;
    }
    case Transport::kHttp:
      return "http#" + std::to_string(conn_id);
    case Transport::kNone:
      break;
  }
  return "internal";
}

}  // namespace vks::server
