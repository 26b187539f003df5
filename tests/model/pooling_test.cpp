// EmbeddingPooler: mean / cls / last of hand-made rows, independent of how they are chunked, a
// recomputed chunk (after a preemption) counted once, L2 normalization, bad calls refused.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/common/error.h"
#include "engine/model/pooling.h"

namespace vks {
namespace {

// 5 tokens x 3 dims: row p = {p+1, -(p+1)*2, 0.5}.
std::vector<float> rows() {
  std::vector<float> r;
  for (int p = 0; p < 5; ++p) r.insert(r.end(), {float(p + 1), -2.0f * float(p + 1), 0.5f});
  return r;
}

std::vector<float> pooled(Pooling p, const std::vector<int>& chunks, bool normalize = false) {
  const std::vector<float> r = rows();
  EmbeddingPooler pooler(p, 3, 5);
  int pos = 0;
  for (int n : chunks) {
    EXPECT_FALSE(pooler.complete());
    pooler.add(pos, &r[static_cast<size_t>(pos) * 3], n);
    pos += n;
  }
  EXPECT_TRUE(pooler.complete());
  return pooler.result(normalize);
}

TEST(Pooling, MeanClsLast) {
  EXPECT_EQ(pooled(Pooling::kMean, {5}), (std::vector<float>{3.0f, -6.0f, 0.5f}));
  EXPECT_EQ(pooled(Pooling::kCls, {5}), (std::vector<float>{1.0f, -2.0f, 0.5f}));
  EXPECT_EQ(pooled(Pooling::kLast, {5}), (std::vector<float>{5.0f, -10.0f, 0.5f}));
}

TEST(Pooling, ChunkingDoesNotChangeTheResult) {
  for (Pooling p : {Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    const auto whole = pooled(p, {5});
    EXPECT_EQ(pooled(p, {1, 1, 1, 1, 1}), whole) << pooling_name(p);
    EXPECT_EQ(pooled(p, {2, 3}), whole) << pooling_name(p);
  }
}

TEST(Pooling, RecomputedPositionsCountOnce) {
  const std::vector<float> r = rows();
  EmbeddingPooler pooler(Pooling::kMean, 3, 5);
  pooler.add(0, r.data(), 3);
  pooler.add(0, r.data(), 4);  // preempted, recomputed from 0: only position 3 is new
  pooler.add(4, &r[12], 1);
  ASSERT_TRUE(pooler.complete());
  EXPECT_EQ(pooler.result(false), (std::vector<float>{3.0f, -6.0f, 0.5f}));
  EXPECT_THROW(pooler.add(0, r.data(), 6), Error);  // past the end
}

TEST(Pooling, GapsAndEarlyResultsAreBugs) {
  const std::vector<float> r = rows();
  EmbeddingPooler pooler(Pooling::kMean, 3, 5);
  EXPECT_THROW(pooler.add(2, r.data(), 1), Error);  // positions 0..1 never seen
  EXPECT_THROW(pooler.result(true), Error);
  EXPECT_THROW(EmbeddingPooler(Pooling::kMean, 3, 0), Error);
}

TEST(Pooling, L2Normalize) {
  const auto v = pooled(Pooling::kLast, {5}, true);
  const double norm = std::sqrt(5.0 * 5.0 + 10.0 * 10.0 + 0.25);
  EXPECT_FLOAT_EQ(v[0], static_cast<float>(5.0 / norm));
  EXPECT_FLOAT_EQ(v[1], static_cast<float>(-10.0 / norm));
  std::vector<float> zero(4, 0.0f);
  l2_normalize(zero);
  EXPECT_EQ(zero, std::vector<float>(4, 0.0f));
}

TEST(Pooling, Names) {
  EXPECT_EQ(pooling_from_gguf(-1), Pooling::kMean);  // absent
  EXPECT_EQ(pooling_from_gguf(0), Pooling::kMean);   // none: generative models get mean
  EXPECT_EQ(pooling_from_gguf(1), Pooling::kMean);
  EXPECT_EQ(pooling_from_gguf(2), Pooling::kCls);
  EXPECT_EQ(pooling_from_gguf(3), Pooling::kLast);
  for (Pooling p : {Pooling::kMean, Pooling::kCls, Pooling::kLast}) EXPECT_EQ(pooling_from_name(pooling_name(p)), p);
  EXPECT_FALSE(pooling_from_name("max"));
  EXPECT_FALSE(pooling_from_name(""));
}

}  // namespace
}  // namespace vks
