#include "server/server_options.h"

#include <filesystem>

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "engine/common/error.h"
#include "engine/vulkan/runner/expert_split.h"
#include "server/http/keep_alive.h"
#include "store/model_cache.h"

namespace vks::server {

namespace {

using group_t = struct group;

uint32_t parse_mode(const std::string& text) {
  char* end = nullptr;
  const unsigned long mode = std::strtoul(text.c_str(), &end, 8);
  if (text.empty() || *end != '\0' || mode > 0777) {
    throw Error(ErrorCode::kInvalidArgument,
                "--socket-mode must be an octal permission like 0660, got '" + text + "'");
  }
  return static_cast<uint32_t>(mode);
}

// A numeric id, or a user/group name looked up in the system databases.
uint32_t resolve_id(const std::string& text, bool group) {
  char* end = nullptr;
  const unsigned long n = std::strtoul(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0' && n <= UINT32_MAX) return static_cast<uint32_t>(n);
  if (group) {
    if (const group_t* g = getgrnam(text.c_str())) return g->gr_gid;
    throw Error(ErrorCode::kInvalidArgument, "--allow-gid: no group named '" + text + "'");
  }
  if (const passwd* p = getpwnam(text.c_str())) return p->pw_uid;
  throw Error(ErrorCode::kInvalidArgument, "--allow-uid: no user named '" + text + "'");
}

// Endpoint mistakes are reported before the (possibly long) model load.
void check_endpoints(const ServerOptions& o) {
  // A key that was given but cannot be one is reported as malformed, not as missing.
  if (!o.curve_secret_key.empty()) {
    static constexpr std::string_view kZ85 =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
    const bool z85 = o.curve_secret_key.find_first_not_of(kZ85) == std::string::npos;
    if (o.curve_secret_key.size() != 40 || !z85) {
      throw Error(ErrorCode::kInvalidArgument,
                  "--curve-secret-key is malformed: expected 40 Z85 characters (as printed by zmq_curve_keypair), got " +
                      std::to_string(o.curve_secret_key.size()) + (z85 ? " characters" : " characters, some not Z85"));
    }
  }
  for (const auto& [flag, ep] : {std::pair<const char*, const std::string&>{"--router", o.router_endpoint},
                                 std::pair<const char*, const std::string&>{"--pub", o.pub_endpoint}}) {
    if (ep.empty()) continue;
    const bool tcp = ep.rfind("tcp://", 0) == 0;
    if (!tcp && ep.rfind("ipc://", 0) != 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(flag) + " " + ep + ": ZeroMQ endpoints must be ipc://PATH or tcp://HOST:PORT");
    }
    if (tcp && o.curve_secret_key.size() != 40) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(flag) + " " + ep + " is tcp:// but no CURVE key was given: pass "
                  "--curve-secret-key (40-char Z85 secret key, e.g. from zmq_curve_keypair) or use ipc://");
    }
  }
}

}  // namespace

std::optional<ServerOptions> parse_options(int argc, char** argv) {
  ServerOptions o;
  CLI::App app{"vkstreamd: the vkstream inference daemon (Unix socket + ZeroMQ, msgpack protocol)"};
  app.set_version_flag("--version", "vkstreamd 0.1.0");
  std::string scope = std::getenv("XDG_RUNTIME_DIR") != nullptr ? "user" : "system";
  std::string mode = "0660";

  app.add_option("-m,--model", o.model_path,
                 "GGUF model file to serve, or a cached model name (see `vkstream pull`, `vkstream models`): "
                 "loaded at start, never unloaded, and the default of requests that name no model");
  app.add_option("--models-dir", o.models_dirs,
                 "a folder whose *.gguf files are served by file stem, loaded on first use (repeatable)");
  bool no_model_cache = false;
  app.add_flag("--no-model-cache", no_model_cache,
               "do not serve the models `vkstream pull` put in the model cache (only --model and --models-dir)");
  app.add_option("--max-loaded-models", o.max_loaded_models,
                 "most models loaded at once; loading another unloads the least recently used idle one")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--max-loaded-bytes", o.max_loaded_bytes,
                 "host memory the loaded models may take together (weights and KV caches; 0 = three quarters "
                 "of the host's memory); models on a discrete GPU are held to nine tenths of its own memory")
      ->capture_default_str();
  std::string keep_alive = "5m";
  app.add_option("--keep-alive", keep_alive,
                 "how long an idle model stays loaded unless a request says otherwise: seconds or a duration "
                 "(\"5m\", \"1h30m\"; negative: until evicted or unloaded)")
      ->capture_default_str();
  app.add_option("--scope", scope, "default socket locations: user ($XDG_RUNTIME_DIR/vkstream) or "
                                   "system (/run/vkstream)")
      ->check(CLI::IsMember({"user", "system"}))
      ->capture_default_str();
  app.add_option("--socket", o.socket_path, "Unix socket path (default <dir>/vkstream.sock)");
  app.add_option("--router,--zmq", o.router_endpoint,
                 "ZeroMQ ROUTER endpoint (default ipc://<dir>/router.zmq)");
  app.add_option("--pub", o.pub_endpoint, "ZeroMQ XPUB endpoint (default ipc://<dir>/pub.zmq)");
  app.add_option("--socket-mode", mode, "permissions of the socket files we create (octal)")
      ->capture_default_str();
  std::vector<std::string> allow_users;
  std::vector<std::string> deny_users;
  std::vector<std::string> allow_groups;
  app.add_option("--allow-uid", allow_users,
                 "user (name or uid) allowed on the Unix socket, in addition to the daemon's own uid and "
                 "root, which are always allowed unless --deny-uid names them (repeatable)");
  app.add_option("--deny-uid", deny_users,
                 "user (name or uid) refused on the Unix socket even if it is the owner or root (repeatable)");
  app.add_option("--allow-gid", allow_groups,
                 "group (name or gid) whose members may use the Unix socket (repeatable)");
  app.add_option("--curve-secret-key", o.curve_secret_key,
                 "CURVE server secret key (Z85); required for tcp:// ZeroMQ endpoints");
  app.add_option("--max-frame-bytes", o.limits.max_frame_bytes, "largest request frame")
      ->check(CLI::Range(64u, 1u << 30))->capture_default_str();
  app.add_option("--max-output-bytes", o.limits.max_output_bytes,
                 "bytes queued for one Unix-socket client before it is dropped as a slow consumer")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 34))->capture_default_str();
  app.add_option("--max-prompt-tokens", o.limits.max_prompt_tokens, "0 = model context")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--max-tokens", o.limits.max_tokens, "largest max_tokens a request may ask; 0 = context")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--max-requests-per-connection", o.limits.max_requests_per_connection)
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--max-queued", o.limits.max_queued, "waiting requests before 'overloaded'")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--idle-exit", o.idle_exit_s,
                 "exit 0 after this many seconds without connection or request (0 = never)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--grace", o.grace_s, "seconds running requests get to finish at SIGTERM")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--retention", o.retention_s, "seconds finished streams stay available for replay")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--retention-max-bytes", o.retention_max_bytes,
                 "memory bound of the retained finished streams")->capture_default_str();
  CLI::Option* cpu = app.add_flag("--cpu", o.force_cpu, "run on the CPU backend instead of Vulkan");
  app.add_flag("--vulkan", o.force_vulkan,
               "run on Vulkan even where the CPU backend is the default (a CPU-type Vulkan device such as lavapipe); "
               "fail without a device")
      ->excludes(cpu);
  app.add_flag("--no-cpu-fallback", o.no_cpu_fallback, "fail instead of falling back to the CPU");
  app.add_flag("--mmap-weights", o.mmap_weights,
               "the CPU backend reads the weights from the mapped model file instead of a copy in (huge-page) memory: "
               "less memory held, slower decode");
  app.add_option("--threads", o.cpu_threads,
                 "threads of the CPU backend (0 = one per physical core this process may use, within its cgroup CPU "
                 "quota)")
      ->check(CLI::Range(0, 1024))->capture_default_str();
  app.add_option("--device", o.device, "Vulkan device name or index");
  std::string kv_type;
  app.add_option("--kv-type", kv_type,
                 "KV cache element type of keys and values: f16 (F32 on the CPU backend), q8_0 (about half of F16's "
                 "bytes) or q4_0 (under a third)")
      ->check(CLI::IsMember({"f16", "q8_0", "q4_0"}));
  app.add_option("--kv-type-k", o.kv_type_k, "KV cache type of the keys alone (overrides --kv-type)")
      ->check(CLI::IsMember({"f16", "q8_0", "q4_0"}));
  app.add_option("--kv-type-v", o.kv_type_v, "KV cache type of the values alone (overrides --kv-type)")
      ->check(CLI::IsMember({"f16", "q8_0", "q4_0"}));
  std::string cpu_experts = "auto";
  app.add_option("--cpu-experts", cpu_experts,
                 "mixture-of-experts models on a GPU: keep the experts of the first N expert layers in host memory "
                 "and run them on the CPU (llama.cpp's --n-cpu-moe); all, or auto: as many as the GPU's memory needs")
      ->check([](const std::string& text) {
        try {
          vks::vk::parse_cpu_expert_layers(text);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      })
      ->capture_default_str();
  app.add_option("-c,--ctx-size,--kv-tokens", o.kv_tokens,
                 "each model's KV pool in tokens, shared by its concurrent sequences as in llama.cpp's server "
                 "(rounded up to whole 16-token blocks); one request's prompt + max_tokens must fit in it "
                 "(0 = sized from a 256 MiB budget)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-batched-tokens", o.max_batched_tokens)->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-seqs", o.max_seqs)->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--progress-interval", o.progress_interval_ms,
                 "milliseconds between the `progress` events of a prompt read in several steps (0 = after every "
                 "step, -1 = none)")
      ->check(CLI::Range(-1.0, 3'600'000.0))->capture_default_str();
  app.add_option("--speculative", o.speculative,
                 "speculative decoding: off, or ngram (prompt lookup; output unchanged)")
      ->check(CLI::IsMember({"off", "ngram"}))->capture_default_str();
  app.add_option("--draft-model", o.draft_model_path,
                 "speculative decoding of --model's requests with this small model of the same vocabulary as the "
                 "drafter (output unchanged)");
  app.add_option("--draft-tokens", o.draft_tokens,
                 "most tokens drafted per step with --speculative ngram or --draft-model")
      ->check(CLI::Range(1, 16))->capture_default_str();
  app.add_flag("--draft-always", o.draft_always,
               "with --speculative ngram or --draft-model: verify every draft found, even where the measured step "
               "costs say it does not pay (default: draft only what pays)");
  bool no_prefix_cache = false;
  app.add_flag("--no-prefix-cache", no_prefix_cache, "disable prefix caching");
  bool fcfs = false;
  app.add_flag("--fcfs", fcfs, "schedule first come, first served, ignoring request priorities");
  app.add_flag("--priority", o.priority_policy,
               "schedule by priority with aging (the default; kept for old command lines)");
  app.add_option("--chat-template", o.chat_template_path,
                 "Jinja chat template file to use instead of the model's tokenizer.chat_template");
  app.add_option("--http", o.http_endpoints,
                 "serve the OpenAI/Ollama HTTP API on PORT (loopback), HOST:PORT or unix:PATH (repeatable)");
  app.add_option("--api-key", o.api_key,
                 "HTTP API key, checked as 'Authorization: Bearer KEY'; required for non-loopback --http")
      ->envname("VKSTREAM_API_KEY");
  app.add_option("--max-connections", o.max_connections,
                 "open Unix-socket connections before the next is answered 'overloaded' (both caps are lowered to "
                 "fit the open-file limit, which vkstreamd raises to its hard limit)")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--http-cors", o.http_cors,
                 "a browser origin (https://app.example) allowed to call the HTTP API besides localhost/127.0.0.1 "
                 "(repeatable; '*' = any)");
  app.add_option("--http-max-connections", o.http_max_connections, "open HTTP connections before 503")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--log-level", o.log_level)
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return std::nullopt;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help();
    return std::nullopt;
  } catch (const CLI::CallForVersion&) {
    std::cout << "vkstreamd 0.1.0\n";
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string(e.what()) + " (see vkstreamd --help)");
  }
  for (const std::string& u : allow_users) o.allow_uids.push_back(resolve_id(u, /*group=*/false));
  for (const std::string& g : allow_groups) o.allow_gids.push_back(resolve_id(g, /*group=*/true));
  for (const std::string& u : deny_users) o.deny_uids.push_back(resolve_id(u, /*group=*/false));
  check_endpoints(o);
  if (!o.model_path.empty()) o.model_path = vks::store::resolve_model_or_path(o.model_path);
  if (!o.draft_model_path.empty()) {
    if (o.model_path.empty()) throw Error(ErrorCode::kInvalidArgument, "--draft-model needs --model (the model it drafts for)");
    o.draft_model_path = vks::store::resolve_model_or_path(o.draft_model_path);
  }
  o.serve_model_cache = !no_model_cache;
  // The same reading as Ollama's OLLAMA_KEEP_ALIVE and the requests' keep_alive strings.
  const std::variant<double, http::ApiError> keep_alive_s = http::parse_keep_alive(http::JsonBody(keep_alive));
  if (const auto* bad = std::get_if<http::ApiError>(&keep_alive_s)) {
    throw Error(ErrorCode::kInvalidArgument, "--keep-alive " + keep_alive + ": " + bad->message +
                                                 " (seconds like 300 or -1, or a duration like \"5m\", \"1h30m\")");
  }
  o.keep_alive_s = std::get<double>(keep_alive_s);
  o.scope = scope == "user" ? Scope::kUser : Scope::kSystem;
  o.socket_mode = parse_mode(mode);
  o.prefix_caching = !no_prefix_cache;
  if (fcfs) o.priority_policy = false;
  o.cpu_expert_layers = vks::vk::parse_cpu_expert_layers(cpu_experts);
  if (!kv_type.empty()) {  // both pools, except one named on its own
    if (app.count("--kv-type-k") == 0) o.kv_type_k = kv_type;
    if (app.count("--kv-type-v") == 0) o.kv_type_v = kv_type;
  }
  return o;
}

std::string default_socket_dir(Scope scope) {
  if (scope == Scope::kSystem) return "/run/vkstream";
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime == nullptr || *runtime == '\0') {
    throw Error(ErrorCode::kInvalidArgument,
                "XDG_RUNTIME_DIR is not set: use --scope system (as root), or --socket PATH with --router and --pub");
  }
  return std::string(runtime) + "/vkstream";
}

namespace {

// hello advertises the endpoints to clients that may run in another directory: an ipc:// path
// relative to the daemon's working directory is made absolute (an abstract "@name" stays).
std::string absolute_ipc(const std::string& endpoint) {
  constexpr std::string_view kIpc = "ipc://";
  if (endpoint.rfind(kIpc, 0) != 0) return endpoint;
  const std::string path = endpoint.substr(kIpc.size());
  if (path.empty() || path[0] == '/' || path[0] == '@') return endpoint;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return ec ? endpoint : std::string(kIpc) + abs.lexically_normal().string();
}

}  // namespace

void apply_default_paths(ServerOptions& options) {
  if (options.socket_path.empty() || options.router_endpoint.empty() || options.pub_endpoint.empty()) {
    const std::string dir = default_socket_dir(options.scope);
    if (options.socket_path.empty()) options.socket_path = dir + "/vkstream.sock";
    if (options.router_endpoint.empty()) options.router_endpoint = "ipc://" + dir + "/router.zmq";
    if (options.pub_endpoint.empty()) options.pub_endpoint = "ipc://" + dir + "/pub.zmq";
  }
  options.router_endpoint = absolute_ipc(options.router_endpoint);
  options.pub_endpoint = absolute_ipc(options.pub_endpoint);
}

std::string ipc_path(const std::string& endpoint) {
  constexpr std::string_view kIpc = "ipc://";
  if (endpoint.rfind(kIpc, 0) != 0) return {};
  return endpoint.substr(kIpc.size());
}

}  // namespace vks::server
