#include "protocol/stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace vks::proto {
namespace {

constexpr std::array<double, 16> kLatencyBoundsMs = {1,   2,    5,    10,   20,   50,    100,   200,
                                                     500, 1000, 2000, 5000, 10000, 20000, 60000, 120000};

double nearest_rank(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// Prometheus wants a plain decimal: the shortest of %.15g / %.17g that round-trips.
std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void metric(std::string& out, std::string_view name, std::string_view kind, std::string_view help, double value) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(kind).append("\n");
  out.append(name).append(" ").append(num(value)).append("\n");
}

// One histogram's samples; `labels` ("model=\"x\"" or "") go before `le` on every line.
void histogram_samples(std::string& out, std::string_view name, const std::string& labels, const Histogram& h) {
  const std::string sep = labels.empty() ? "" : ",";
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    out.append(name).append("_bucket{").append(labels).append(sep).append("le=\"").append(num(h.bounds[i] / 1000.0));
    out.append("\"} ").append(std::to_string(h.cumulative[i])).append("\n");
  }
  out.append(name).append("_bucket{").append(labels).append(sep).append("le=\"+Inf\"} ").append(std::to_string(h.count)).append("\n");
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out.append(name).append("_sum").append(braces).append(" ").append(num(h.sum / 1000.0)).append("\n");
  out.append(name).append("_count").append(braces).append(" ").append(std::to_string(h.count)).append("\n");
}

void histogram(std::string& out, std::string_view name, std::string_view help, const Histogram& h) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" histogram\n");
  histogram_samples(out, name, "", h);
}

// A label value: backslash, double quote and newline escaped (text format 0.0.4).
std::string label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// The KV pools by kind, one sample per pool (label kind="full" / "window").
void kv_pool_metrics(std::string& out, const std::vector<KvPoolSnapshot>& pools) {
  if (pools.empty()) return;
  const struct {
    const char* name;
    const char* help;
    int64_t (*value)(const KvPoolSnapshot&);
  } families[] = {
      {"vkstream_kv_pool_bytes", "Bytes of a KV pool (by the kind of layers it serves).",
       [](const KvPoolSnapshot& p) { return p.bytes_total; }},
      {"vkstream_kv_pool_bytes_used", "Bytes of a KV pool held by sequences.",
       [](const KvPoolSnapshot& p) { return p.bytes_used; }},
      {"vkstream_kv_pool_blocks", "Blocks of a KV pool.", [](const KvPoolSnapshot& p) { return int64_t{p.blocks_total}; }},
      {"vkstream_kv_pool_blocks_used", "Blocks of a KV pool held by sequences.",
       [](const KvPoolSnapshot& p) { return int64_t{p.blocks_used}; }},
  };
  for (const auto& f : families) {
    out.append("# HELP ").append(f.name).append(" ").append(f.help).append("\n");
    out.append("# TYPE ").append(f.name).append(" gauge\n");
    for (const KvPoolSnapshot& p : pools) {
      out.append(f.name).append("{kind=\"").append(label_value(p.kind)).append("\"} ");
      out.append(num(static_cast<double>(f.value(p)))).append("\n");
    }
  }
}

}  // namespace

std::span<const double> default_latency_bounds_ms() { return kLatencyBoundsMs; }

Histogram make_histogram(std::span<const double> samples, std::span<const double> bounds) {
  Histogram h;
  h.bounds.assign(bounds.begin(), bounds.end());
  h.cumulative.assign(bounds.size(), 0);
  std::vector<double> sorted;
  sorted.reserve(samples.size());
  for (double s : samples) {
    if (std::isnan(s) || s < 0 || std::isinf(s)) continue;
    sorted.push_back(s);
  }
  std::sort(sorted.begin(), sorted.end());
  h.count = sorted.size();
  for (double s : sorted) h.sum += s;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    h.cumulative[i] = static_cast<uint64_t>(std::upper_bound(sorted.begin(), sorted.end(), h.bounds[i]) - sorted.begin());
  }
  h.p50 = nearest_rank(sorted, 0.50);
  h.p90 = nearest_rank(sorted, 0.90);
  h.p99 = nearest_rank(sorted, 0.99);
  return h;
}

std::string render_prometheus(const StatsSnapshot& s) {
  std::string out;
  metric(out, "vkstream_requests_waiting", "gauge", "Requests waiting in the engine queue.", s.waiting);
  metric(out, "vkstream_requests_running", "gauge", "Requests being generated.", s.running);
  metric(out, "vkstream_kv_blocks_total", "gauge", "KV-cache blocks in the pool.", s.kv_blocks_total);
  metric(out, "vkstream_kv_bytes_per_token", "gauge", "Bytes one token's keys and values take in the KV cache.",
         s.kv_bytes_per_token);
  metric(out, "vkstream_kv_blocks_used", "gauge", "KV-cache blocks in use.", s.kv_blocks_used);
  metric(out, "vkstream_kv_usage_ratio", "gauge", "Used / total KV-cache blocks.", s.kv_usage);
  kv_pool_metrics(out, s.kv_pools);
  metric(out, "vkstream_cpu_expert_layers", "gauge",
         "Expert layers whose experts run on the CPU beside the GPU (--cpu-experts).", s.cpu_expert_layers);
  metric(out, "vkstream_prefix_cache_hit_tokens_total", "counter", "Prompt tokens served from the prefix cache.",
         static_cast<double>(s.prefix_hit_tokens));
  metric(out, "vkstream_prefix_cache_query_tokens_total", "counter", "Prompt tokens looked up in the prefix cache.",
         static_cast<double>(s.prefix_query_tokens));
  metric(out, "vkstream_prefix_cache_hit_ratio", "gauge", "Prefix-cache hit tokens / query tokens.", s.prefix_hit_rate);
  metric(out, "vkstream_requests_finished_total", "counter", "Requests finished (any reason).",
         static_cast<double>(s.requests_finished));
  metric(out, "vkstream_generated_tokens_total", "counter", "Tokens generated.", static_cast<double>(s.tokens_generated));
  metric(out, "vkstream_prompt_tokens_total", "counter", "Prompt tokens processed.",
         static_cast<double>(s.prompt_tokens_processed));
  metric(out, "vkstream_decode_tokens_per_second", "gauge", "Decode throughput over the recent window.",
         s.decode_tokens_per_s);
  metric(out, "vkstream_draft_tokens_total", "counter", "Speculative draft tokens verified.",
         static_cast<double>(s.draft_tokens));
  metric(out, "vkstream_draft_accepted_tokens_total", "counter", "Speculative draft tokens accepted.",
         static_cast<double>(s.accepted_tokens));
  metric(out, "vkstream_draft_acceptance_ratio", "gauge", "Accepted / verified speculative draft tokens.",
         s.draft_acceptance_rate);
  metric(out, "vkstream_connections", "gauge", "Open Unix-socket connections.", s.server.connections);
  metric(out, "vkstream_zmq_peers", "gauge", "ZeroMQ ROUTER peers seen recently.", s.server.zmq_peers);
  metric(out, "vkstream_subscriptions", "gauge", "Live XPUB topic subscriptions.", s.server.subscriptions);
  metric(out, "vkstream_retained_requests", "gauge", "Finished requests retained for replay.",
         s.server.retained_requests);
  metric(out, "vkstream_requests_total", "counter", "Generate requests accepted.",
         static_cast<double>(s.server.requests_total));
  metric(out, "vkstream_requests_rejected_total", "counter", "Generate requests rejected with an error.",
         static_cast<double>(s.server.requests_rejected));
  metric(out, "vkstream_uptime_seconds", "gauge", "Seconds since the daemon started.", s.server.uptime_s);
  histogram(out, "vkstream_ttft_seconds", "Time to first token (recent requests).", s.ttft_ms);
  histogram(out, "vkstream_itl_seconds", "Inter-token latency (recent tokens).", s.itl_ms);
  return out;
}

std::string render_model_metrics(std::span<const ModelMetrics> models) {
  struct Family {
    const char* name;
    const char* kind;
    const char* help;
    double (*value)(const ModelMetrics&);
  };
  static const Family kFamilies[] = {
      {"vkstream_model_loaded", "gauge", "1 when the model is loaded.", [](const ModelMetrics& m) { return m.loaded ? 1.0 : 0.0; }},
      {"vkstream_model_requests_waiting", "gauge", "The model's requests waiting in its engine queue.",
       [](const ModelMetrics& m) { return static_cast<double>(m.waiting); }},
      {"vkstream_model_requests_running", "gauge", "The model's requests being generated.",
       [](const ModelMetrics& m) { return static_cast<double>(m.running); }},
      {"vkstream_model_kv_blocks_total", "gauge", "KV-cache blocks in the model's pool.",
       [](const ModelMetrics& m) { return static_cast<double>(m.kv_blocks_total); }},
      {"vkstream_model_kv_blocks_used", "gauge", "KV-cache blocks of the model in use.",
       [](const ModelMetrics& m) { return static_cast<double>(m.kv_blocks_used); }},
      {"vkstream_model_requests_finished_total", "counter", "The model's requests finished since it was loaded.",
       [](const ModelMetrics& m) { return static_cast<double>(m.requests_finished); }},
      {"vkstream_model_generated_tokens_total", "counter", "Tokens the model generated since it was loaded.",
       [](const ModelMetrics& m) { return static_cast<double>(m.tokens_generated); }},
      {"vkstream_model_resident_bytes", "gauge", "Memory the loaded model holds (weights and KV pool).",
       [](const ModelMetrics& m) { return static_cast<double>(m.resident_bytes); }},
      {"vkstream_model_load_seconds", "gauge", "How long the model's last load took.",
       [](const ModelMetrics& m) { return m.load_seconds; }},
  };
  std::string out;
  if (models.empty()) return out;
  for (const Family& f : kFamilies) {
    out.append("# HELP ").append(f.name).append(" ").append(f.help).append("\n");
    out.append("# TYPE ").append(f.name).append(" ").append(f.kind).append("\n");
    for (const ModelMetrics& m : models) {
      out.append(f.name).append("{model=\"").append(label_value(m.name)).append("\"} ").append(num(f.value(m))).append("\n");
    }
  }
  struct HistogramFamily {
    const char* name;
    const char* help;
    const Histogram ModelMetrics::*histogram;
  };
  static const HistogramFamily kHistograms[] = {
      {"vkstream_model_ttft_seconds", "The model's time to first token (recent requests).", &ModelMetrics::ttft_ms},
      {"vkstream_model_itl_seconds", "The model's inter-token latency (every token since the daemon started).",
       &ModelMetrics::itl_ms},
  };
  for (const HistogramFamily& f : kHistograms) {
    out.append("# HELP ").append(f.name).append(" ").append(f.help).append("\n");
    out.append("# TYPE ").append(f.name).append(" histogram\n");
    for (const ModelMetrics& m : models) {
      histogram_samples(out, f.name, "model=\"" + label_value(m.name) + "\"", m.*(f.histogram));
    }
  }
  return out;
}

}  // namespace vks::proto
