#pragma once
// Checks, before the (possibly long) model load, that every endpoint vkstreamd was not handed by
// systemd can be bound: the Unix socket and ipc:// paths (folder creatable, a test socket bindable,
// no live daemon already there) and tcp:// addresses. A failure names the endpoint, the reason, and
// what to do (`--scope user` or `--socket PATH`).
#include "server/listen_fds.h"
#include "server/server_options.h"

namespace vks::server {

// Throws vks::Error (kInvalidArgument for a path or address that cannot be used, kIo otherwise).
void check_endpoints_bindable(const ServerOptions& options, const ListenFds& fds);

// --scope user: creates the default socket folder ($XDG_RUNTIME_DIR/vkstream) with mode 0700
// whatever the umask, when a default path lives there (check_endpoints_bindable calls it first).
void create_user_runtime_dir(const ServerOptions& options);

// Checks one Unix socket path (also used for ipc:// endpoints); `flag` names the option for messages.
void check_unix_path_bindable(const std::string& path, const char* flag, uint32_t dir_mode);

}  // namespace vks::server
