#pragma once
// The arithmetic of `vkstream bench`: length distributions, Poisson arrival schedules and latency
// percentiles. Pure functions, unit-tested on their own.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace vks::cli {

// A distribution of positive integer lengths, parsed from text:
//   "N"              always N
//   "A:B"            uniform integer in [A, B]
//   "normal:M:S"     normal with mean M and standard deviation S, rounded, clamped to >= 1
//   "exp:M"          exponential with mean M, rounded up, >= 1
class LengthDistribution {
 public:
  // nullopt and a message in *error when the text is malformed or has non-positive bounds.
  static std::optional<LengthDistribution> parse(std::string_view text, std::string* error);
  int32_t sample(std::mt19937_64& rng) const;
  int32_t max_value() const;  // upper bound of what sample() can return (clamped for unbounded ones)
  std::string describe() const;

 private:
  enum class Kind { kFixed, kUniform, kNormal, kExponential };
  Kind kind_ = Kind::kFixed;
  double a_ = 1;
  double b_ = 1;
};

// Arrival offsets in seconds for n requests: a Poisson process of `rate_per_s` (exponential
// inter-arrival gaps, first arrival after one gap), or all zero when rate_per_s <= 0 (closed loop).
std::vector<double> poisson_arrivals(size_t n, double rate_per_s, std::mt19937_64& rng);

// Percentile p in [0, 100] of samples by linear interpolation between closest ranks (numpy's
// default); 0 for an empty set. Sorts a copy.
double percentile(std::vector<double> samples, double p);

struct LatencySummary {
  size_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
LatencySummary summarize(const std::vector<double>& samples);

// "[=====>    ]" of `width` cells for done/total.
std::string progress_bar(size_t done, size_t total, int width);

}  // namespace vks::cli
