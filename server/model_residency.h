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

// Two memories, two budgets: models on the CPU backend or on a GPU that shares the host's memory
// (integrated, lavapipe) take host memory; models on a discrete GPU take its own device-local heap.
struct ResidencyLimits {
  int32_t max_loaded = 3;        // --max-loaded-models
  uint64_t max_bytes = 0;        // host memory the loaded models may take together (0 = no budget)
  uint64_t max_device_bytes = 0; // the discrete device's heap they may take together (0 = no budget)
};

// What one model takes (weights, KV pool, activations) from each memory. A model on a discrete
// GPU can take both: experts kept in host memory (--cpu-experts) beside the rest on the device.
struct ModelCost {
  uint64_t host_bytes = 0;
  uint64_t device_bytes = 0;  // in a discrete GPU's own memory
};

// A loaded model as the policy sees it.
struct ResidentModel {
  std::string name;
  bool pinned = false;
  bool busy = false;  // requests in flight or being prepared
  ResidencyClock::time_point last_used{};
  uint64_t host_bytes = 0;    // what it holds (weights, KV pool, activations) in host memory
  uint64_t device_bytes = 0;  // ... and in the discrete device's heap
};

// The models to evict, least recently used first, so that one more model costing `incoming` fits
// beside the rest; nullopt when it cannot fit even after evicting every evictable one (the others
// are busy or pinned). Only models holding bytes in the memory that is short are evicted for bytes. A model
// alone larger than its budget fits once everything evictable in that memory is gone (the loader
// then reports whether it really fits).
std::optional<std::vector<std::string>> evictions_for(const std::vector<ResidentModel>& loaded, const ModelCost& incoming,
                                                      const ResidencyLimits& limits);

// When an idle model unloads by itself: keep_alive seconds after it was last used; never for a
// negative keep_alive (nullopt). 0 = as soon as it is idle.
std::optional<ResidencyClock::time_point> expiry_of(ResidencyClock::time_point last_used, double keep_alive_s);

}  // namespace vks::server
