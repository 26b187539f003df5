#pragma once
// Everything vkstreamd can be told on its command line, with the defaults of the product brief.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/limits.h"

namespace vks::server {

enum class Scope { kUser, kSystem };

struct ServerOptions {
  std::string model_path;  // --model: preloaded, pinned and the default ("" = none)
  // Many models (docs/PROTOCOL.md "Models"): every *.gguf in each --models-dir by file stem, and
  // what `vkstream pull` put in the model cache, loaded on demand, at most max_loaded_models at once.
  std::vector<std::string> models_dirs;
  bool serve_model_cache = true;   // --no-model-cache: only --model and --models-dir
  int32_t max_loaded_models = 3;
  uint64_t max_loaded_bytes = 0;   // 0 = three quarters of the host's memory
  double keep_alive_s = 300;       // a model idle this long unloads (negative: never)
  Scope scope = Scope::kUser;
  std::string socket_path;       // Unix socket; empty = default for the scope
  std::string router_endpoint;   // ZeroMQ ROUTER; empty = ipc:// default for the scope
  std::string pub_endpoint;      // ZeroMQ XPUB; empty = ipc:// default for the scope
  uint32_t socket_mode = 0660;
  std::vector<uint32_t> allow_uids;  // empty = own uid + root
  std::vector<uint32_t> allow_gids;
  std::vector<uint32_t> deny_uids;   // excluded even when they are the owner or root
  std::string curve_secret_key;  // Z85, 40 chars; required for tcp:// endpoints
  proto::ProtocolLimits limits;  // frame, prompt, max_tokens, per-connection, queue, output bounds
  double idle_exit_s = 0;        // 0 = never
  double grace_s = 10;           // SIGTERM: running requests get this long to finish
  double retention_s = 300;      // finished streams kept for replay / late subscribers
  uint64_t retention_max_bytes = 64u << 20;
  // Engine and runner.
  bool force_cpu = false;
  bool no_cpu_fallback = false;
  bool force_vulkan = false;  // --vulkan: overrides the backend rule (engine/vulkan/runner/backend_choice.h)
  bool mmap_weights = false;  // --mmap-weights: the CPU backend reads the mapped file (RunnerOptions::cpu_weights_in_memory)
  std::string device;            // name or index; empty = best
  int32_t cpu_threads = 0;       // --threads: the CPU backend's (RunnerOptions::cpu_threads; 0 = physical cores)
  int32_t kv_tokens = 0;         // 0 = runner default
  std::string kv_type_k = "f16";  // the KV pools' element types (--kv-type, --kv-type-k, --kv-type-v)
  std::string kv_type_v = "f16";
  // --cpu-experts: the first N expert layers' experts in host memory, run on the CPU
  // (RunnerOptions::cpu_expert_layers; -1 automatic: as many as the GPU's memory needs).
  int32_t cpu_expert_layers = -1;
  int32_t max_batched_tokens = 256;
  int32_t max_seqs = 16;
  // Milliseconds between a long prefill's `progress` events per request (0: after every prefill
  // step; negative: none). EngineConfig::progress_interval_ms.
  double progress_interval_ms = 1000.0;
  // --speculative ngram: prompt-lookup speculative decoding, drafting up to --draft-tokens per
  // step (a request's `speculative` field overrides both).
  std::string speculative = "off";
  int32_t draft_tokens = 4;
  // --draft-model FILE: speculative decoding of --model's requests drafts with this model (same
  // vocabulary, checked at load), up to --draft-tokens per step, instead of prompt lookup.
  std::string draft_model_path;
  // --draft-always: verify every draft found, whatever a wider step costs (off: draft lengths follow
  // the measured step costs and each request's acceptance, and are 0 where speculation would not pay).
  bool draft_always = false;
  bool prefix_caching = true;
  bool priority_policy = true;  // priority with aging; --fcfs turns it off
  std::string log_level = "info";
  std::string chat_template_path;  // overrides the model's tokenizer.chat_template; empty = the model's
  // HTTP front end (docs/HTTP.md).
  std::vector<std::string> http_endpoints;  // --http PORT | HOST:PORT | unix:PATH (repeatable)
  std::string api_key;                      // --api-key: required for non-loopback --http
  uint32_t http_max_connections = 1024;
  uint32_t max_connections = 1024;  // Unix-socket (msgpack) connections; more are answered overloaded
  std::vector<std::string> http_cors;       // --http-cors ORIGIN: browser origins allowed besides localhost
};

// Parses argv. Returns the options, or nullopt after printing help/version (exit 0).
// Throws vks::Error(kInvalidArgument) with a message naming the flag on bad input.
std::optional<ServerOptions> parse_options(int argc, char** argv);

// Fills empty socket paths/endpoints with the scope's defaults
// ($XDG_RUNTIME_DIR/vkstream/... for users, /run/vkstream/... for the system).
void apply_default_paths(ServerOptions& options);

// Directory that holds the default sockets of a scope. Throws if the user scope has no
// $XDG_RUNTIME_DIR.
std::string default_socket_dir(Scope scope);

// The filesystem path of an ipc:// endpoint, or empty for other transports.
std::string ipc_path(const std::string& endpoint);

}  // namespace vks::server
