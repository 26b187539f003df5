#pragma once
// Which served models stay loaded: the policy alone (no loading, no clocks of its own), so that it
// can be tested on its own. A model is evictable when it is loaded, not pinned (--model), has no
// request in flight and nothing is being prepared for it; the least recently used goes first.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vks::server {

using ResidencyClock = std::chrono::steady_clock;

struct ResidencyLimits {
  int32_t max_loaded = 3;   // --max-loaded-models
  uint64_t max_bytes = 0;   // memory the loaded models may take together (0 = no byte budget)
};

// A loaded model as the policy sees it.
struct ResidentModel {
  std::string name;
  bool pinned = false;
  bool busy = false;  // requests in flight or being prepared
  ResidencyClock::time_point last_used{};
  uint64_t bytes = 0;  // what it holds (weights, KV pool, activations)
};

// The models to evict, least recently used first, so that one more model of `incoming_bytes` fits
// beside the rest; nullopt when it cannot fit even after evicting every evictable one (the others
// are busy or pinned). A model alone larger than the budget fits once everything evictable is gone
// (the loader then reports whether it really fits).
std::optional<std::vector<std::string>> evictions_for(const std::vector<ResidentModel>& loaded, uint64_t incoming_bytes,
                                                      const ResidencyLimits& limits);

// When an idle model unloads by itself: keep_alive seconds after it was last used; never for a
// negative keep_alive (nullopt). 0 = as soon as it is idle.
std::optional<ResidencyClock::time_point> expiry_of(ResidencyClock::time_point last_used, double keep_alive_s);

}  // namespace vks::server
