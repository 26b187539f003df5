// PreparingRequests: a cancel of an id being prepared sets its stop flag and is remembered until
// its preparation ends; ids are taken while they prepare.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "server/preparing_requests.h"

namespace vks::server {
namespace {

TEST(PreparingRequests, ACancelStopsThePreparationAndIsToldAtItsEnd) {
  PreparingRequests preparing;
  auto stop = std::make_shared<std::atomic<bool>>(false);
  ASSERT_TRUE(preparing.add("a", stop));
  EXPECT_TRUE(preparing.contains("a"));
  EXPECT_FALSE(preparing.add("a", std::make_shared<std::atomic<bool>>(false)));  // taken
  EXPECT_FALSE(preparing.cancel("b"));  // unknown: not ours to answer
  EXPECT_FALSE(stop->load());
  EXPECT_TRUE(preparing.cancel("a"));
  EXPECT_TRUE(stop->load());
  EXPECT_TRUE(preparing.finish("a"));
  EXPECT_FALSE(preparing.contains("a"));
  EXPECT_FALSE(preparing.finish("a"));  // forgotten
  EXPECT_EQ(preparing.size(), 0u);
}

TEST(PreparingRequests, AnUncancelledPreparationFinishesUncancelled) {
  PreparingRequests preparing;
  auto stop = std::make_shared<std::atomic<bool>>(false);
  ASSERT_TRUE(preparing.add("a", stop));
  ASSERT_TRUE(preparing.add("b", nullptr));  // a preparation with nothing to stop
  EXPECT_TRUE(preparing.cancel("b"));
  EXPECT_FALSE(preparing.finish("a"));
  EXPECT_FALSE(stop->load());
  EXPECT_TRUE(preparing.finish("b"));
}

}  // namespace
}  // namespace vks::server
