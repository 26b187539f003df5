#include "server/bind_check.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <tuple>

#include "engine/common/error.h"
#include "server/http/http_endpoint.h"

namespace vks::server {
namespace {

constexpr const char* kHint = "use --scope user or --socket PATH (with --router/--pub for the ZeroMQ endpoints)";

std::string parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool fill_unix_address(const std::string& path, sockaddr_un& addr) {
  addr = sockaddr_un{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return true;
}

[[noreturn]] void fail(const char* flag, const std::string& what, int err) {
  const std::string reason = std::strerror(err);
  const std::string whose = err == EACCES || err == EPERM ? " (running as uid " + std::to_string(::getuid()) + ")" : "";
  throw Error(ErrorCode::kInvalidArgument, std::string(flag) + ": " + what + ": " + reason + whose + "; " + kHint);
}

void check_tcp_bindable(const std::string& endpoint, const char* flag) {
  const std::string hostport = endpoint.substr(6);  // after tcp://
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos) return;  // check_endpoints already rejects malformed ones
  std::string host = hostport.substr(0, colon);
  const std::string port = hostport.substr(colon + 1);
  if (host == "*") host = "0.0.0.0";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, std::string(flag) + " " + endpoint + ": cannot resolve the address");
  }
  const int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  int err = 0;
  if (fd < 0) {
    err = errno;
  } else {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) err = errno;
    close(fd);
  }
  freeaddrinfo(res);
  if (err != 0) {
    throw Error(ErrorCode::kInvalidArgument, std::string(flag) + " " + endpoint + ": cannot bind: " + std::strerror(err) +
                                                 (err == EADDRINUSE ? " (another process listens there)" : ""));
  }
}

}  // namespace

void check_unix_path_bindable(const std::string& path, const char* flag, uint32_t dir_mode) {
  sockaddr_un addr{};
  if (!fill_unix_address(path, addr)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(flag) + " " + path + ": longer than a Unix socket path may be (" +
                                                 std::to_string(sizeof(addr.sun_path) - 1) + " bytes)");
  }
  const std::string dir = parent_dir(path);
  for (size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
    const std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), dir_mode) != 0 && errno != EEXIST) {
      fail(flag, "cannot create the folder " + prefix + " for " + path, errno);
    }
    if (pos == std::string::npos) break;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) fail(flag, "cannot create " + path + " in " + dir, errno);
  // A live server at the path: binding would take its address away.
  const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe >= 0) {
    const bool answers = connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    close(probe);
    if (answers) {
      throw Error(ErrorCode::kInvalidArgument, std::string(flag) + " " + path +
                                                   ": address in use: another server (vkstreamd?) already listens there; "
                                                   "stop it or choose another --socket PATH");
    }
  }
  // Bind a test socket beside it: catches what access() cannot (read-only file systems, LSMs).
  sockaddr_un test{};
  const std::string test_path = dir + "/.vkstreamd-bind-check-" + std::to_string(::getpid());
  if (!fill_unix_address(test_path, test)) return;  // the real path fits; the probe name may not
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(ErrorCode::kIo, std::string("socket(): ") + std::strerror(errno));
  ::unlink(test_path.c_str());
  const int rc = bind(fd, reinterpret_cast<const sockaddr*>(&test), sizeof test);
  const int err = errno;
  close(fd);
  ::unlink(test_path.c_str());
  if (rc != 0) fail(flag, "cannot bind a socket in " + dir, err);
}

void create_user_runtime_dir(const ServerOptions& options) {
  if (options.scope != Scope::kUser) return;
  std::string dir;
  try {
    dir = default_socket_dir(Scope::kUser);
  } catch (const Error&) {
    return;  // no XDG_RUNTIME_DIR: every path was given, or the endpoint checks say what to do
  }
  const auto inside = [&](const std::string& path) { return parent_dir(path) == dir; };
  if (!inside(options.socket_path) && !inside(ipc_path(options.router_endpoint)) && !inside(ipc_path(options.pub_endpoint))) {
    return;
  }
  // mkdir's mode is masked by the umask (0755 under the usual 022), and the folder holds the
  // sockets that drive the engine: only the user may enter it, whatever the umask says.
  if (::mkdir(dir.c_str(), 0700) == 0) {
    if (::chmod(dir.c_str(), 0700) != 0) fail("--scope user", "cannot make " + dir + " private (chmod 0700)", errno);
  } else if (errno != EEXIST) {
    fail("--scope user", "cannot create the folder " + dir, errno);
  }
}

void check_endpoints_bindable(const ServerOptions& options, const ListenFds& fds) {
  create_user_runtime_dir(options);
  if (!fds.uds) check_unix_path_bindable(options.socket_path, "--socket", 0755);
  for (const auto& [flag, endpoint, adopted] :
       {std::tuple<const char*, const std::string&, bool>{"--router", options.router_endpoint, fds.router.has_value()},
        std::tuple<const char*, const std::string&, bool>{"--pub", options.pub_endpoint, fds.pub.has_value()}}) {
    if (adopted || endpoint.empty()) continue;
    if (const std::string path = ipc_path(endpoint); !path.empty()) {
      check_unix_path_bindable(path, flag, 0755);
    } else if (endpoint.rfind("tcp://", 0) == 0) {
      check_tcp_bindable(endpoint, flag);
    }
  }
  if (fds.http) return;
  for (const std::string& spec : options.http_endpoints) {
    const http::HttpEndpoint ep = http::parse_http_endpoint(spec);
    if (ep.is_unix) {
      check_unix_path_bindable(ep.path, "--http", 0755);
    } else if (ep.port != 0) {
      const std::string host = ep.host.find(':') != std::string::npos ? "[" + ep.host + "]" : ep.host;
      check_tcp_bindable("tcp://" + host + ":" + std::to_string(ep.port), "--http");
    }
  }
}

}  // namespace vks::server
