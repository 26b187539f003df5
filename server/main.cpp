// vkstreamd: parse options, take socket-activated descriptors, load the --model if given (--http
// answering 503 "loading" meanwhile), serve.
#include <csignal>
#include <cstdio>
#include <exception>

#include <spdlog/spdlog.h>

#include "engine/common/error.h"
#include "server/bind_check.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/instance.h"
#include "server/daemon.h"
#include "server/fd_limit.h"
#include "server/http_loading.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a client vanishing mid-write is an error code, not a signal
  try {
    std::optional<vks::server::ServerOptions> options = vks::server::parse_options(argc, argv);
    if (!options) return 0;
    spdlog::set_level(spdlog::level::from_str(options->log_level));
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ vkstreamd: %v");
    // Before any connection: past the open-file limit accept() fails and clients get resets.
    const vks::server::ConnectionCaps caps = vks::server::fit_connection_caps(
        vks::server::raise_fd_limit(), options->http_max_connections, options->max_connections);
    if (!caps.note.empty()) spdlog::warn("{}", caps.note);
    options->http_max_connections = caps.http;
    options->max_connections = caps.uds;
    vks::server::ListenFds fds = vks::server::take_listen_fds();
    if (!fds.activated() || !fds.uds || !fds.router || !fds.pub) vks::server::apply_default_paths(*options);
    vks::server::check_endpoints_bindable(*options, fds);  // before the model load, which may take long
    const std::string shader_cache = vks::vk::place_driver_shader_cache();
    if (!shader_cache.empty()) spdlog::debug("driver shader cache: {}", shader_cache);
    vks::server::SystemdNotifier notifier;
    // --http answers 503 "loading" meanwhile, on listeners the Daemon then takes over as they are.
    std::unique_ptr<vks::http::LoadingResponder> loading = vks::server::answer_http_while_loading(*options, fds);
    // --model is loaded before serving (and pinned); without it every model loads on first use.
    vks::server::ServedModel pinned;
    auto compute_share = std::make_shared<vks::ComputeShare>();  // one for every model this daemon loads
    if (!options->model_path.empty()) {
      pinned = vks::server::load_served_model(options->model_path, *options, options->chat_template_path, compute_share,
                                              &notifier);
    }
    if (loading) vks::server::hand_http_to_daemon(*loading, fds);
    int rc = 0;
    {
      vks::server::Daemon daemon(std::move(*options), fds, std::move(pinned), std::move(compute_share), notifier);
      rc = daemon.run();
    }
    // With the runner gone: destroying the instance is what lets Mesa finish writing its shader
    // cache, which the next start (a restart, a socket activation after an idle exit) compiles from.
#if defined(__SANITIZE_ADDRESS__)
    // Not under AddressSanitizer: lavapipe keeps 128 bytes in its globals on some CPUs (seen on an
    // AMD EPYC, not on Intel Xeons), which unloading it with the last instance orphans; LeakSanitizer
    // then fails the exit status the daemon tests check, for a leak that is the driver's.
#else
    vks::vk::Instance::release_shared();
#endif
    return rc;
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "vkstreamd: %s [%s]\n", e.what(), std::string(vks::error_code_name(e.code())).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkstreamd: %s\n", e.what());
    return 1;
  }
}
