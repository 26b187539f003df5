// ItlHistogram: gaps between token events become cumulative bucket counts that only grow.
#include <gtest/gtest.h>

#include "server/itl_histogram.h"

namespace vks::server {
namespace {

using std::chrono::milliseconds;

TEST(ItlHistogram, CountsEveryGapOncePerTokenAndNeverShrinks) {
  ItlHistogram h;
  const auto t0 = std::chrono::steady_clock::now();
  h.on_tokens("a", 1, t0);                      // first token: no gap yet
  h.on_tokens("a", 1, t0 + milliseconds(3));    // 3 ms
  h.on_tokens("b", 1, t0);
  h.on_tokens("a", 2, t0 + milliseconds(13));   // 10 ms for 2 tokens: two samples of 5 ms
  h.on_tokens("b", 1, t0 + milliseconds(400));  // 400 ms
  proto::Histogram first;
  h.fill(first);
  EXPECT_EQ(first.count, 4u);
  EXPECT_NEAR(first.sum, 3 + 5 + 5 + 400, 1e-6);
  ASSERT_EQ(first.bounds.size(), first.cumulative.size());
  for (size_t i = 0; i < first.bounds.size(); ++i) {
    uint64_t expected = 0;
    for (double s : {3.0, 5.0, 5.0, 400.0}) expected += s <= first.bounds[i] ? 1 : 0;
    EXPECT_EQ(first.cumulative[i], expected) << "bucket le " << first.bounds[i];
  }
  h.forget("a");
  h.on_tokens("a", 1, t0 + milliseconds(5000));  // a new request with the same id starts afresh
  h.on_tokens("b", 1, t0 + milliseconds(401));
  proto::Histogram second;
  h.fill(second);
  EXPECT_EQ(second.count, 5u);
  for (size_t i = 0; i < second.cumulative.size(); ++i) EXPECT_GE(second.cumulative[i], first.cumulative[i]);
}

}  // namespace
}  // namespace vks::server
