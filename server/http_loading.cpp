#include "server/http_loading.h"

#include <spdlog/spdlog.h>

#include "server/uds_server.h"

namespace vks::server {

std::unique_ptr<http::LoadingResponder> answer_http_while_loading(const ServerOptions& options, ListenFds& fds) {
  if (options.http_endpoints.empty() && !fds.http) return nullptr;
  http::LoadingResponderOptions lo;
  for (const std::string& spec : options.http_endpoints) {
    lo.endpoints.push_back(http::parse_http_endpoint(spec));
    http::require_api_key_off_loopback(lo.endpoints.back(), options.api_key);
  }
  lo.activated_fd = fds.http;
  fds.http.reset();  // the responder owns it from here, even when it throws
  lo.unix_mode = options.socket_mode;
  // The front end's limits (http_frontend_wiring.cpp), as far as they are known before the load.
  lo.limits.max_connections = options.http_max_connections;
  lo.limits.max_body_bytes = 2ull * options.limits.max_frame_bytes;
  PeerPolicy policy{options.allow_uids, options.allow_gids, options.deny_uids};
  lo.allow_peer = [policy](const http::PeerInfo& peer, std::string& why) {
    if (!peer.is_unix || policy.allows(peer.cred)) return true;  // TCP carries no credentials
    why = "uid " + std::to_string(peer.cred.uid) + " is not allowed on this socket (--allow-uid/--allow-gid)";
    return false;
  };
  auto responder = std::make_unique<http::LoadingResponder>(std::move(lo));
  for (const std::string& a : responder->addresses()) spdlog::info("HTTP API on {}: 503 (loading) until the model is loaded", a);
  return responder;
}

void hand_http_to_daemon(http::LoadingResponder& responder, ListenFds& fds) { fds.http_handed = responder.hand_over(); }

}  // namespace vks::server
