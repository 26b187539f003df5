// The arithmetic of `vkstream bench`.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "clients/cli/bench_stats.h"

namespace {

using vks::cli::LengthDistribution;

TEST(BenchStats, PercentilesInterpolateBetweenRanks) {
  const std::vector<double> s = {5, 1, 4, 2, 3};  // sorted: 1..5
  EXPECT_DOUBLE_EQ(vks::cli::percentile(s, 0), 1);
  EXPECT_DOUBLE_EQ(vks::cli::percentile(s, 50), 3);
  EXPECT_DOUBLE_EQ(vks::cli::percentile(s, 90), 4.6);
  EXPECT_DOUBLE_EQ(vks::cli::percentile(s, 100), 5);
  EXPECT_DOUBLE_EQ(vks::cli::percentile({}, 50), 0);
  const vks::cli::LatencySummary sum = vks::cli::summarize(s);
  EXPECT_EQ(sum.count, 5u);
  EXPECT_DOUBLE_EQ(sum.mean, 3);
  EXPECT_DOUBLE_EQ(sum.max, 5);
  EXPECT_DOUBLE_EQ(sum.p99, 4.96);
}

TEST(BenchStats, DistributionsParseAndStayInRange) {
  std::string err;
  std::mt19937_64 rng(3);
  const auto fixed = LengthDistribution::parse("32", &err);
  ASSERT_TRUE(fixed) << err;
  EXPECT_EQ(fixed->sample(rng), 32);
  const auto uni = LengthDistribution::parse("10:20", &err);
  ASSERT_TRUE(uni) << err;
  int lo = 1000, hi = 0;
  for (int i = 0; i < 2000; ++i) {
    const int v = uni->sample(rng);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(lo, 10);
  EXPECT_EQ(hi, 20);
  const auto normal = LengthDistribution::parse("normal:64:16", &err);
  ASSERT_TRUE(normal) << err;
  double sum = 0;
  for (int i = 0; i < 4000; ++i) {
    const int v = normal->sample(rng);
    EXPECT_GE(v, 1);
    sum += v;
  }
  EXPECT_NEAR(sum / 4000, 64, 2);
  const auto ex = LengthDistribution::parse("exp:8", &err);
  ASSERT_TRUE(ex) << err;
  for (int i = 0; i < 1000; ++i) EXPECT_GE(ex->sample(rng), 1);
  for (const char* bad : {"", "x", "0", "-3", "5:2", "1.5", "normal:4", "normal:4:-1", "exp:", "a:b:c:d", "9999999"}) {
    EXPECT_FALSE(LengthDistribution::parse(bad, &err)) << bad;
    EXPECT_NE(err.find("bad length distribution"), std::string::npos);
  }
}

TEST(BenchStats, PoissonArrivalsHaveTheRequestedRate) {
  std::mt19937_64 rng(11);
  const std::vector<double> t = vks::cli::poisson_arrivals(20000, 50.0, rng);
  ASSERT_EQ(t.size(), 20000u);
  for (size_t i = 1; i < t.size(); ++i) ASSERT_GE(t[i], t[i - 1]);
  EXPECT_NEAR(t.back() / 20000.0, 1.0 / 50.0, 0.001);  // mean gap
  // Exponential gaps: the coefficient of variation is 1.
  std::vector<double> gaps(t.size());
  std::adjacent_difference(t.begin(), t.end(), gaps.begin());
  double mean = 0, var = 0;
  for (double g : gaps) mean += g;
  mean /= static_cast<double>(gaps.size());
  for (double g : gaps) var += (g - mean) * (g - mean);
  var /= static_cast<double>(gaps.size());
  EXPECT_NEAR(std::sqrt(var) / mean, 1.0, 0.05);
  const std::vector<double> closed = vks::cli::poisson_arrivals(5, 0, rng);
  EXPECT_EQ(closed, std::vector<double>(5, 0.0));
}

TEST(BenchStats, ProgressBar) {
  EXPECT_EQ(vks::cli::progress_bar(0, 10, 10), "[>         ]");
  EXPECT_EQ(vks::cli::progress_bar(5, 10, 10), "[=====>    ]");
  EXPECT_EQ(vks::cli::progress_bar(10, 10, 10), "[==========]");
  EXPECT_EQ(vks::cli::progress_bar(20, 10, 4), "[====]");
}

}  // namespace
