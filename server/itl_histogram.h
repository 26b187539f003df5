#pragma once
// Inter-token latency as a real Prometheus histogram: every token event of every request counted
// once since the daemon started (the engine's own ITL samples are a recent window, whose bucket
// counts would go down). Measured on the loop thread between consecutive token events of a request
// (an event with n tokens counts n samples of gap/n). Loop thread only.
#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/stats.h"

namespace vks::server {

class ItlHistogram {
 public:
  ItlHistogram();
  void on_tokens(const std::string& id, size_t tokens, std::chrono::steady_clock::time_point now);
  void forget(const std::string& id);  // the request finished
  // Replaces the bucket counts, count and sum of `h` (percentiles stay as they are).
  void fill(proto::Histogram& h) const;
  uint64_t count() const { return count_; }

 private:
  void observe(double ms, uint64_t n);
  std::vector<double> bounds_;
  std::vector<uint64_t> cumulative_;
  uint64_t count_ = 0;
  double sum_ = 0;
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> last_token_at_;
};

}  // namespace vks::server
