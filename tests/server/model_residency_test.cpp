// The served models' residency policy and name lookup on their own: which idle models are evicted
// for a new one (least recently used first, never busy or pinned ones), when keep_alive ends, and
// how a request's model name finds its slot.
#include <gtest/gtest.h>

#include "server/model_residency.h"
#include "server/model_set.h"

namespace vks::server {
namespace {

using std::chrono::seconds;

ResidentModel model(const std::string& name, int age_s, bool busy = false, bool pinned = false, uint64_t bytes = 100) {
  ResidentModel m;
  m.name = name;
  m.last_used = ResidencyClock::time_point{} + seconds(1000 - age_s);
  m.busy = busy;
  m.pinned = pinned;
  m.bytes = bytes;
  return m;
}

TEST(ModelResidency, NothingIsEvictedWhileThereIsRoom) {
  const auto out = evictions_for({model("a", 10), model("b", 5)}, 100, ResidencyLimits{3, 0});
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->empty());
}

TEST(ModelResidency, TheLeastRecentlyUsedIdleModelGoesFirst) {
  const auto out = evictions_for({model("recent", 1), model("old", 50), model("middle", 20)}, 100, ResidencyLimits{3, 0});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, std::vector<std::string>{"old"});
}

TEST(ModelResidency, BusyAndPinnedModelsAreNeverEvicted) {
  const auto out = evictions_for({model("busy", 90, true), model("pinned", 80, false, true), model("idle", 1)}, 100,
                                 ResidencyLimits{3, 0});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, std::vector<std::string>{"idle"});
  // Nothing evictable and no room: the new model cannot load now.
  EXPECT_FALSE(evictions_for({model("busy", 90, true), model("pinned", 80, false, true)}, 100, ResidencyLimits{2, 0}));
}

TEST(ModelResidency, TheByteBudgetEvictsAsManyAsItTakes) {
  // 1000 bytes: 300 + 300 + 300 loaded, 500 incoming -> two of the three go, oldest first.
  const auto out = evictions_for({model("a", 30, false, false, 300), model("b", 20, false, false, 300),
                                  model("c", 10, false, false, 300)},
                                 500, ResidencyLimits{8, 1000});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, (std::vector<std::string>{"a", "b"}));
  // A model alone above the budget is tried once everything evictable is gone.
  const auto alone = evictions_for({model("a", 30, false, false, 300)}, 5000, ResidencyLimits{8, 1000});
  ASSERT_TRUE(alone);
  EXPECT_EQ(*alone, std::vector<std::string>{"a"});
  // ... but not beside a busy one.
  EXPECT_FALSE(evictions_for({model("busy", 30, true, false, 300)}, 5000, ResidencyLimits{8, 1000}));
}

TEST(ModelResidency, KeepAliveExpiry) {
  const ResidencyClock::time_point t{};
  EXPECT_EQ(expiry_of(t, 0), t);
  EXPECT_EQ(expiry_of(t, 2.5), t + std::chrono::milliseconds(2500));
  EXPECT_FALSE(expiry_of(t, -1));
}

TEST(ModelSet, FindsByNameFileNameAndLatestTag) {
  ModelSet set;
  set.set_files({{"stories260K", "/m/stories260K.gguf", 1, 0}, {"owner/repo:Q4_K_M", "/c/owner/repo/r.Q4_K_M.gguf", 2, 0}});
  ASSERT_NE(set.find("stories260K"), nullptr);
  EXPECT_EQ(set.find("stories260K:latest"), set.find("stories260K"));
  EXPECT_EQ(set.find("stories260K.gguf"), set.find("stories260K"));
  EXPECT_EQ(set.find("owner/repo:Q4_K_M")->file.path, "/c/owner/repo/r.Q4_K_M.gguf");
  EXPECT_EQ(set.find("r.Q4_K_M.gguf"), set.find("owner/repo:Q4_K_M"));
  EXPECT_EQ(set.find("nope"), nullptr);
  EXPECT_EQ(set.find(""), nullptr);  // two models, none pinned: no default
  EXPECT_EQ(set.names(), "owner/repo:Q4_K_M, stories260K");
}

TEST(ModelSet, TheOnlyModelOrThePinnedOneIsTheDefault) {
  ModelSet one;
  one.set_files({{"a", "/m/a.gguf", 1, 0}});
  ASSERT_NE(one.find(""), nullptr);
  EXPECT_EQ(one.find("")->file.name, "a");
  ModelSet pinned;
  pinned.set_files({{"a", "/m/a.gguf", 1, 0}, {"b", "/m/b.gguf", 1, 0}});
  pinned.add_pinned({"z", "/p/z.gguf", 1, 0}, nullptr, proto::ModelInfo{});
  EXPECT_EQ(pinned.find("")->file.name, "z");
  EXPECT_EQ(pinned.slots().front()->file.name, "z");
}

TEST(ModelSet, RescanKeepsLoadingModelsAndDropsVanishedOnes) {
  ModelSet set;
  set.set_files({{"a", "/m/a.gguf", 1, 0}, {"b", "/m/b.gguf", 1, 0}});
  set.find("b")->loading = true;
  set.set_files({{"c", "/m/c.gguf", 1, 0}});
  EXPECT_EQ(set.find("a"), nullptr);
  EXPECT_NE(set.find("b"), nullptr);  // its load is under way
  EXPECT_NE(set.find("c"), nullptr);
}

TEST(ModelSet, ExpiryFollowsKeepAliveAndUnloadRequests) {
  ModelSlot slot;
  slot.last_used = ResidencyClock::time_point{} + seconds(100);
  slot.keep_alive_s = 300;
  EXPECT_EQ(slot.expires_at(), slot.last_used + seconds(300));
  slot.keep_alive_s = -1;
  EXPECT_FALSE(slot.expires_at());
  slot.unload_requested = true;
  EXPECT_EQ(slot.expires_at(), slot.last_used);
  slot.pinned = true;
  EXPECT_FALSE(slot.expires_at());
}

}  // namespace
}  // namespace vks::server
