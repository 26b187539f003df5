#pragma once
// The --http endpoints while the model loads: bound before load_served_model and answered 503
// "loading" (server/http/loading_responder.h), then handed, still listening, to the Daemon's HTTP
// front end. Without this a client would see "connection refused" during a load of many seconds.
#include <memory>

#include "server/http/loading_responder.h"
#include "server/listen_fds.h"
#include "server/server_options.h"

namespace vks::server {

// Null when there is no HTTP front end (no --http, no activated "http" descriptor). Takes
// fds.http over (it is reset). Applies the front end's checks first (API key off loopback) and
// its Unix-socket peer policy. Throws vks::Error.
std::unique_ptr<http::LoadingResponder> answer_http_while_loading(const ServerOptions& options, ListenFds& fds);

// After the load: the responder stops; its listening sockets go to fds.http_handed.
void hand_http_to_daemon(http::LoadingResponder& responder, ListenFds& fds);

}  // namespace vks::server
