#include "clients/cli/bench_stats.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

namespace vks::cli {
namespace {

bool parse_number(std::string_view s, double* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end && std::isfinite(*out);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return parts;
    start = pos + 1;
  }
}

constexpr double kMaxLength = 1 << 20;

}  // namespace

std::optional<LengthDistribution> LengthDistribution::parse(std::string_view text, std::string* error) {
  const auto fail = [&](const std::string& why) -> std::optional<LengthDistribution> {
    if (error != nullptr) {
      *error = "bad length distribution '" + std::string(text) + "': " + why +
               " (use N, A:B, normal:MEAN:SD or exp:MEAN)";
    }
    return std::nullopt;
  };
  const std::vector<std::string_view> parts = split(text, ':');
  LengthDistribution d;
  double x = 0, y = 0;
  if (parts.size() == 1) {
    if (!parse_number(parts[0], &x)) return fail("not a number");
    d.kind_ = Kind::kFixed;
    d.a_ = d.b_ = x;
  } else if (parts.size() == 2 && parts[0] == "exp") {
    if (!parse_number(parts[1], &x)) return fail("mean is not a number");
    d.kind_ = Kind::kExponential;
    d.a_ = d.b_ = x;
  } else if (parts.size() == 2) {
    if (!parse_number(parts[0], &x) || !parse_number(parts[1], &y)) return fail("bounds are not numbers");
    if (y < x) return fail("upper bound below lower bound");
    d.kind_ = Kind::kUniform;
    d.a_ = x;
    d.b_ = y;
  } else if (parts.size() == 3 && parts[0] == "normal") {
    if (!parse_number(parts[1], &x) || !parse_number(parts[2], &y)) return fail("mean or deviation is not a number");
    if (y < 0) return fail("negative deviation");
    d.kind_ = Kind::kNormal;
    d.a_ = x;
    d.b_ = y;
  } else {
    return fail("unknown form");
  }
  if (d.a_ < 1 || d.a_ > kMaxLength || (d.kind_ == Kind::kUniform && d.b_ > kMaxLength)) {
    return fail("lengths must be between 1 and 1048576");
  }
  if ((d.kind_ == Kind::kFixed || d.kind_ == Kind::kUniform) &&
      (d.a_ != std::floor(d.a_) || d.b_ != std::floor(d.b_))) {
    return fail("lengths must be integers");
  }
  return d;
}

int32_t LengthDistribution::sample(std::mt19937_64& rng) const {
  double v = a_;
  switch (kind_) {
    case Kind::kFixed: break;
    case Kind::kUniform:
      v = static_cast<double>(std::uniform_int_distribution<int64_t>(static_cast<int64_t>(a_), static_cast<int64_t>(b_))(rng));
      break;
    case Kind::kNormal: v = std::round(std::normal_distribution<double>(a_, b_)(rng)); break;
    case Kind::kExponential: v = std::ceil(std::exponential_distribution<double>(1.0 / a_)(rng)); break;
  }
  return static_cast<int32_t>(std::clamp(v, 1.0, static_cast<double>(max_value())));
}

int32_t LengthDistribution::max_value() const {
  switch (kind_) {
    case Kind::kFixed: return static_cast<int32_t>(a_);
    case Kind::kUniform: return static_cast<int32_t>(b_);
    case Kind::kNormal: return static_cast<int32_t>(std::min(kMaxLength, std::ceil(a_ + 4 * b_)));
    case Kind::kExponential: return static_cast<int32_t>(std::min(kMaxLength, std::ceil(a_ * 8)));
  }
  return 1;
}

std::string LengthDistribution::describe() const {
  const auto n = [](double v) { return std::to_string(static_cast<int64_t>(v)); };
  switch (kind_) {
    case Kind::kFixed: return n(a_);
    case Kind::kUniform: return "uniform " + n(a_) + ".." + n(b_);
    case Kind::kNormal: return "normal mean " + n(a_) + " sd " + n(b_);
    case Kind::kExponential: return "exponential mean " + n(a_);
  }
  return "";
}

std::vector<double> poisson_arrivals(size_t n, double rate_per_s, std::mt19937_64& rng) {
  std::vector<double> t(n, 0.0);
  if (rate_per_s <= 0) return t;
  std::exponential_distribution<double> gap(rate_per_s);
  double now = 0;
  for (size_t i = 0; i < n; ++i) {
    now += gap(rng);
    t[i] = now;
  }
  return t;
}

double percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(samples.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, samples.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return samples[lo] + (samples[hi] - samples[lo]) * frac;
}

LatencySummary summarize(const std::vector<double>& samples) {
  LatencySummary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  s.p50 = percentile(samples, 50);
  s.p90 = percentile(samples, 90);
  s.p99 = percentile(samples, 99);
  s.max = *std::max_element(samples.begin(), samples.end());
  return s;
}

std::string progress_bar(size_t done, size_t total, int width) {
  if (width < 1) width = 1;
  const size_t cells = total == 0 ? static_cast<size_t>(width)
                                  : std::min<size_t>(static_cast<size_t>(width), done * static_cast<size_t>(width) / total);
  std::string bar = "[";
  bar.append(cells, '=');
  if (cells < static_cast<size_t>(width)) {
    bar.push_back('>');
    bar.append(static_cast<size_t>(width) - cells - 1, ' ');
  }
  bar.push_back(']');
  return bar;
}

}  // namespace vks::cli
