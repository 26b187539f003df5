#pragma once
// The `stats` answer: engine + server counters, TTFT / inter-token-latency histograms, and their
// Prometheus text exposition (format 0.0.4).
#include <cstdint>
#include <span>
#include <string>
#include <vector>


namespace vks::proto {

// Upper bounds (ms) of the latency histogram buckets; +Inf is implicit.
std::span<const double> default_latency_bounds_ms();

struct Histogram {
  std::vector<double> bounds;        // bucket upper bounds, ascending (ms)
  std::vector<uint64_t> cumulative;  // samples ≤ bounds[i]; same length as bounds
  uint64_t count = 0;                // all samples (the +Inf bucket)
  double sum = 0;
  double p50 = 0, p90 = 0, p99 = 0;  // exact percentiles of the samples (nearest rank); 0 if none
  bool operator==(const Histogram&) const = default;
};
// NaN and negative samples are ignored.
Histogram make_histogram(std::span<const double> samples,
                         std::span<const double> bounds = default_latency_bounds_ms());

// Counters the daemon adds to the engine's.
struct ServerStats {
  int32_t connections = 0;         // open Unix-socket connections
  int32_t zmq_peers = 0;           // ROUTER peers seen recently
  int32_t subscriptions = 0;       // live XPUB topic subscriptions
  int32_t retained_requests = 0;   // finished requests kept for replay
  int64_t requests_total = 0;      // accepted generate requests since start
  int64_t requests_rejected = 0;   // generate requests answered with an error
  double uptime_s = 0;
  bool operator==(const ServerStats&) const = default;
};

// One paged KV pool by the kind of layers it serves: "full" keeps every position of a sequence
// (every attention layer's K/V in a model with one pool), "window" only the positions a window
// layer still sees (a model with window layers beside full ones).
struct KvPoolSnapshot {
  std::string kind;
  int32_t layers = 0;        // attention layers whose K/V it holds
  int32_t window = 0;        // the window it keeps (0: whole sequences)
  int32_t blocks_total = 0;
  int32_t blocks_used = 0;
  int32_t blocks_cached = 0; // holding a cached prefix (evictable when not used)
  int64_t bytes_total = 0;
  int64_t bytes_used = 0;
  bool operator==(const KvPoolSnapshot&) const = default;
};

struct StatsSnapshot {
  int32_t waiting = 0;
  int32_t running = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;
  double kv_usage = 0;               // used / total, 0 when total is 0
  int64_t kv_bytes_per_token = 0;    // one token's keys and values in the KV pools, every layer
  std::vector<KvPoolSnapshot> kv_pools;  // "full", then "window" where the model has one
  int32_t cpu_expert_layers = 0;     // expert layers whose experts run on the CPU beside the GPU (--cpu-experts)
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_query_tokens = 0;
  double prefix_hit_rate = 0;        // hit / query, 0 when query is 0
  int64_t requests_finished = 0;
  int64_t tokens_generated = 0;
  int64_t prompt_tokens_processed = 0;
  double decode_tokens_per_s = 0;
  int64_t draft_tokens = 0;          // speculative decoding: draft tokens verified
  int64_t accepted_tokens = 0;       // of them, accepted
  double draft_acceptance_rate = 0;  // accepted / draft, 0 when draft is 0
  Histogram ttft_ms;
  Histogram itl_ms;
  ServerStats server;
  bool operator==(const StatsSnapshot&) const = default;
};

// Prometheus text exposition: vkstream_* gauges/counters and the two histograms
// (vkstream_ttft_seconds, vkstream_itl_seconds; bucket bounds converted to seconds).
std::string render_prometheus(const StatsSnapshot& stats);

// One servable model's figures, for the vkstream_model_* families (label model="NAME").
struct ModelMetrics {
  std::string name;
  bool loaded = false;
  int32_t waiting = 0;
  int32_t running = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;
  int64_t requests_finished = 0;  // since it was loaded
  int64_t tokens_generated = 0;   // since it was loaded
  uint64_t resident_bytes = 0;    // weights + KV pool while loaded
  double load_seconds = 0;        // its last load
  Histogram ttft_ms;              // its engine's recent requests (empty while not loaded)
  Histogram itl_ms;               // every token event since the daemon started
};
// The vkstream_model_* families, one sample per model; label values escaped as the format says.
std::string render_model_metrics(std::span<const ModelMetrics> models);

}  // namespace vks::proto
