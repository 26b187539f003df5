#include "server/itl_histogram.h"

namespace vks::server {

ItlHistogram::ItlHistogram() {
  const auto bounds = proto::default_latency_bounds_ms();
  bounds_.assign(bounds.begin(), bounds.end());
  cumulative_.assign(bounds_.size(), 0);
}

void ItlHistogram::on_tokens(const std::string& id, size_t tokens, std::chrono::steady_clock::time_point now) {
  if (tokens == 0) return;
  auto [it, first] = last_token_at_.try_emplace(id, now);
  if (!first) {
    const double gap_ms = std::chrono::duration<double, std::milli>(now - it->second).count();
    observe(gap_ms / static_cast<double>(tokens), tokens);
    it->second = now;
  }
}

void ItlHistogram::forget(const std::string& id) { last_token_at_.erase(id); }

void ItlHistogram::observe(double ms, uint64_t n) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (ms <= bounds_[i]) cumulative_[i] += n;
  }
  count_ += n;
  sum_ += ms * static_cast<double>(n);
}

void ItlHistogram::fill(proto::Histogram& h) const {
  h.bounds = bounds_;
  h.cumulative = cumulative_;
  h.count = count_;
  h.sum = sum_;
}

}  // namespace vks::server
