// The served models' residency policy and name lookup on their own: which idle models are evicted
// for a new one (least recently used first, never busy or pinned ones), when keep_alive ends, and
// how a request's model name finds its slot.
#include <gtest/gtest.h>

#include "server/device_budget.h"
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
  m.host_bytes = bytes;
  return m;
}

ResidentModel on_device(ResidentModel m) {
  m.device_bytes = m.host_bytes;
  m.host_bytes = 0;
  return m;
}

ModelCost device_cost(uint64_t bytes) { return ModelCost{0, bytes}; }

TEST(ModelResidency, NothingIsEvictedWhileThereIsRoom) {
  const auto out = evictions_for({model("a", 10), model("b", 5)}, ModelCost{100}, ResidencyLimits{3, 0});
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->empty());
}

TEST(ModelResidency, TheLeastRecentlyUsedIdleModelGoesFirst) {
  const auto out = evictions_for({model("recent", 1), model("old", 50), model("middle", 20)}, ModelCost{100}, ResidencyLimits{3, 0});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, std::vector<std::string>{"old"});
}

TEST(ModelResidency, BusyAndPinnedModelsAreNeverEvicted) {
  const auto out = evictions_for({model("busy", 90, true), model("pinned", 80, false, true), model("idle", 1)}, ModelCost{100},
                                 ResidencyLimits{3, 0});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, std::vector<std::string>{"idle"});
  // Nothing evictable and no room: the new model cannot load now.
  EXPECT_FALSE(evictions_for({model("busy", 90, true), model("pinned", 80, false, true)}, ModelCost{100}, ResidencyLimits{2, 0}));
}

TEST(ModelResidency, TheByteBudgetEvictsAsManyAsItTakes) {
  // 1000 bytes: 300 + 300 + 300 loaded, 500 incoming -> two of the three go, oldest first.
  const auto out = evictions_for({model("a", 30, false, false, 300), model("b", 20, false, false, 300),
                                  model("c", 10, false, false, 300)},
                                 ModelCost{500}, ResidencyLimits{8, 1000});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, (std::vector<std::string>{"a", "b"}));
  // A model alone above the budget is tried once everything evictable is gone.
  const auto alone = evictions_for({model("a", 30, false, false, 300)}, ModelCost{5000}, ResidencyLimits{8, 1000});
  ASSERT_TRUE(alone);
  EXPECT_EQ(*alone, std::vector<std::string>{"a"});
  // ... but not beside a busy one.
  EXPECT_FALSE(evictions_for({model("busy", 30, true, false, 300)}, ModelCost{5000}, ResidencyLimits{8, 1000}));
}

TEST(ModelResidency, EachMemoryHasItsOwnBudget) {
  const ResidencyLimits limits{8, /*host*/ 1000, /*device*/ 1000};
  // The device is full (700 + 200 of 1000), the host is not: a 300-byte model for the device evicts
  // the oldest device model, never the older host-memory one, which frees nothing on the device.
  const std::vector<ResidentModel> loaded = {model("host-old", 90, false, false, 600),
                                             on_device(model("dev-old", 50, false, false, 700)),
                                             on_device(model("dev-new", 10, false, false, 200))};
  const auto device = evictions_for(loaded, device_cost(300), limits);
  ASSERT_TRUE(device);
  EXPECT_EQ(*device, std::vector<std::string>{"dev-old"});
  // The same model in host memory (600 + 300 <= 1000) needs nothing to go.
  const auto host = evictions_for(loaded, ModelCost{300}, limits);
  ASSERT_TRUE(host);
  EXPECT_TRUE(host->empty());
  // 500 more in host memory: the host model goes, the device models stay.
  const auto host_big = evictions_for(loaded, ModelCost{500}, limits);
  ASSERT_TRUE(host_big);
  EXPECT_EQ(*host_big, std::vector<std::string>{"host-old"});
  // A busy device model blocks room on the device even when an idle host model could go.
  const std::vector<ResidentModel> busy = {model("host-idle", 90, false, false, 100),
                                           on_device(model("dev-busy", 10, true, false, 900))};
  EXPECT_FALSE(evictions_for(busy, device_cost(300), limits));
  // No device budget (a host without a discrete GPU): device bytes never evict anything.
  const auto unbounded = evictions_for(loaded, device_cost(5000), ResidencyLimits{8, 1000, 0});
  ASSERT_TRUE(unbounded);
  EXPECT_TRUE(unbounded->empty());
  // The count still evicts across memories, oldest first.
  const auto counted = evictions_for(loaded, ModelCost{1}, ResidencyLimits{3, 0, 0});
  ASSERT_TRUE(counted);
  EXPECT_EQ(*counted, std::vector<std::string>{"host-old"});
}

// A model on a discrete GPU with its experts in host memory (--cpu-experts) holds both memories:
// it counts against each budget with its own part, and unloading it frees room in both.
TEST(ModelResidency, ASplitModelCountsInBothMemories) {
  const ResidencyLimits limits{8, /*host*/ 1000, /*device*/ 1000};
  ResidentModel split = model("split-old", 90, false, false, 0);
  split.host_bytes = 600;    // its experts
  split.device_bytes = 300;  // the rest
  const std::vector<ResidentModel> loaded = {split, on_device(model("dev-new", 10, false, false, 500))};
  // 500 more on the device (300 + 500 + 500 > 1000): the split model holds device bytes, so it goes
  // (oldest first), which also frees its 600 host bytes.
  const auto device = evictions_for(loaded, device_cost(500), limits);
  ASSERT_TRUE(device);
  EXPECT_EQ(*device, std::vector<std::string>{"split-old"});
  // 500 more host bytes (600 + 500 > 1000): only the split model holds host memory, so only it goes.
  const auto host = evictions_for(loaded, ModelCost{500}, limits);
  ASSERT_TRUE(host);
  EXPECT_EQ(*host, std::vector<std::string>{"split-old"});
  // An incoming split model counts its host part against the host budget: 300 of host beside 600 fits
  // and 100 of device beside 800 fits, so nothing goes...
  const auto fits = evictions_for(loaded, ModelCost{300, 100}, limits);
  ASSERT_TRUE(fits);
  EXPECT_TRUE(fits->empty());
  // ... while 500 of host does not (counted as device bytes, it would have fitted on the device).
  const auto over = evictions_for(loaded, ModelCost{500, 100}, limits);
  ASSERT_TRUE(over);
  EXPECT_EQ(*over, std::vector<std::string>{"split-old"});
}

vk::DeviceInfo device(VkPhysicalDeviceType type, bool uma, uint64_t heap) {
  vk::DeviceInfo d;
  d.name = "test device";
  d.type = type;
  d.uma = uma;
  d.device_local_bytes = heap;
  return d;
}

TEST(DeviceBudget, OnlyADiscreteGpuHeapIsABudgetOfItsOwn) {
  const RunnerOptions plain;
  const vk::DeviceInfo discrete = device(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, false, 80ull << 30);
  ASSERT_TRUE(device_heap_budget(&discrete, plain));
  EXPECT_EQ(*device_heap_budget(&discrete, plain), (80ull << 30) / 10 * 9);
  // An integrated GPU and lavapipe use the host's memory: the host budget covers them.
  const vk::DeviceInfo integrated = device(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, true, 16ull << 30);
  EXPECT_FALSE(device_heap_budget(&integrated, plain));
  const vk::DeviceInfo cpu = device(VK_PHYSICAL_DEVICE_TYPE_CPU, true, 2ull << 30);
  EXPECT_FALSE(device_heap_budget(&cpu, plain));
  // --cpu puts the models in host memory whatever the device; no device, no device budget.
  RunnerOptions force_cpu;
  force_cpu.force_cpu = true;
  EXPECT_FALSE(device_heap_budget(&discrete, force_cpu));
  EXPECT_FALSE(device_heap_budget(nullptr, plain));
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
  EXPECT_EQ(set.names(), "'owner/repo:Q4_K_M', 'stories260K'");
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
