// StreamRegistry: ids, topics, owners, seq numbering, retention window and byte bound.
#include "server/stream_registry.h"

// GCC 12 reports a false -Wrestrict on std::string concatenation at -O3 (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>

#include <algorithm>

namespace vks::server {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

ClientRef uds(uint64_t id) {
  ClientRef c;
  c.transport = Transport::kUds;
  c.conn_id = id;
  return c;
}

ClientRef zmq(std::string identity) {
  ClientRef c;
  c.transport = Transport::kZmq;
  c.zmq_identity = std::move(identity);
  return c;
}

StreamEntry entry(const std::string& id, ClientRef owner) {
  StreamEntry e;
  e.id = id;
  e.topic = "vks." + std::string(32 - id.size(), '0') + id;
  e.owner = std::move(owner);
  return e;
}

TEST(StreamRegistryTest, OwnerKeysSeparateTransportsAndPeers) {
  EXPECT_NE(owner_key(uds(1)), owner_key(uds(2)));
  EXPECT_NE(owner_key(uds(1)), owner_key(zmq("1")));
  EXPECT_EQ(owner_key(zmq(std::string("\0a", 2))), owner_key(zmq(std::string("\0a", 2))));
  EXPECT_NE(owner_key(zmq(std::string("\0a", 2))), owner_key(zmq(std::string("\0b", 2))));
}

TEST(StreamRegistryTest, FindsByIdAndTopicAndNumbersEvents) {
  StreamRegistry r(10s, 1 << 20);
  StreamEntry& e = r.add(entry("a1", uds(1)));
  EXPECT_EQ(r.find("a1"), &e);
  EXPECT_EQ(r.find_by_topic(e.topic), &e);
  EXPECT_EQ(r.find("zz"), nullptr);
  EXPECT_EQ(r.find_by_topic("vks.nope"), nullptr);
  EXPECT_EQ(r.next_seq(e), 0);
  r.append(e, "first");
  r.append(e, "second");
  EXPECT_EQ(r.next_seq(e), 2);
  EXPECT_EQ(e.events[1], "second");
  EXPECT_EQ(e.bytes, 11u);
}

TEST(StreamRegistryTest, CountsLiveRequestsPerOwner) {
  StreamRegistry r(10s, 1 << 20);
  r.add(entry("a", uds(1)));
  r.add(entry("b", uds(1)));
  r.add(entry("c", zmq("peer")));
  EXPECT_EQ(r.live_count(), 3);
  EXPECT_EQ(r.live_count_of(owner_key(uds(1))), 2);
  EXPECT_EQ(r.live_count_of(owner_key(uds(2))), 0);
  auto owned = r.live_owned_by(owner_key(uds(1)));
  std::sort(owned.begin(), owned.end());
  EXPECT_EQ(owned, (std::vector<std::string>{"a", "b"}));
  r.mark_finished(*r.find("a"), Clock::now());
  r.mark_finished(*r.find("a"), Clock::now());  // idempotent
  EXPECT_EQ(r.live_count(), 2);
  EXPECT_EQ(r.live_count_of(owner_key(uds(1))), 1);
  EXPECT_EQ(r.live_owned_by(owner_key(uds(1))), (std::vector<std::string>{"b"}));
  EXPECT_EQ(r.retained_count(), 1);
}

TEST(StreamRegistryTest, FinishedRequestsExpireAfterTheRetentionWindow) {
  StreamRegistry r(5s, 1 << 20);
  const auto t0 = Clock::now();
  StreamEntry& e = r.add(entry("old", uds(1)));
  r.append(e, "x");
  r.mark_finished(e, t0);
  r.add(entry("live", uds(1)));
  r.evict(t0 + 4s);
  EXPECT_NE(r.find("old"), nullptr);
  r.evict(t0 + 5s);
  EXPECT_EQ(r.find("old"), nullptr);
  EXPECT_EQ(r.find_by_topic(entry("old", uds(1)).topic), nullptr);
  EXPECT_NE(r.find("live"), nullptr);  // live requests never expire
  EXPECT_EQ(r.retained_bytes(), 0u);
}

TEST(StreamRegistryTest, RetainedBytesAreBoundedOldestFirst) {
  StreamRegistry r(1h, 100);
  const auto t0 = Clock::now();
  for (int i = 0; i < 5; ++i) {
    StreamEntry& e = r.add(entry("r" + std::to_string(i), uds(1)));
    r.append(e, std::string(40, 'e'));
    r.mark_finished(e, t0 + std::chrono::seconds(i));
    r.evict(t0 + std::chrono::seconds(i));
    EXPECT_LE(r.retained_bytes(), 100u);
  }
  EXPECT_EQ(r.find("r0"), nullptr);
  EXPECT_EQ(r.find("r2"), nullptr);
  EXPECT_NE(r.find("r3"), nullptr);
  EXPECT_NE(r.find("r4"), nullptr);
  EXPECT_EQ(r.retained_count(), 2);
}

}  // namespace
}  // namespace vks::server
