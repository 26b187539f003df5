// The Unix socket's peer policy as libzmq's ipc filter: the owner and root unless denied, the
// allowed uids and groups, never an empty (admit-all) filter, and a denied uid never admitted
// through a group.
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>

#include "server/ipc_peer_filter.h"

namespace vks::server {
namespace {

bool has(const std::vector<uint32_t>& list, uint32_t v) { return std::find(list.begin(), list.end(), v) != list.end(); }

TEST(IpcPeerFilter, OwnerAndRootUnlessDenied) {
  const auto self = static_cast<uint32_t>(getuid());
  IpcPeerFilter f = ipc_peer_filter(PeerPolicy{});
  EXPECT_TRUE(has(f.uids, self));
  EXPECT_TRUE(has(f.uids, 0));
  EXPECT_TRUE(f.gids.empty());
  f = ipc_peer_filter(PeerPolicy{{1234}, {}, {0}});
  EXPECT_TRUE(has(f.uids, 1234));
  EXPECT_FALSE(has(f.uids, 0));
  EXPECT_FALSE(f.narrowed);
}

TEST(IpcPeerFilter, DenyingEveryoneAdmitsNoOneInsteadOfEveryone) {
  const auto self = static_cast<uint32_t>(getuid());
  const IpcPeerFilter f = ipc_peer_filter(PeerPolicy{{}, {}, {self, 0}});
  ASSERT_FALSE(f.uids.empty() && f.gids.empty());
  EXPECT_FALSE(has(f.uids, self));
  EXPECT_FALSE(has(f.uids, 0));
}

TEST(IpcPeerFilter, GroupsAreKeptWithoutDenyAndExpandedWithIt) {
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no user 'nobody' in the user database";
  const uint32_t gid = nobody->pw_gid;
  IpcPeerFilter f = ipc_peer_filter(PeerPolicy{{}, {gid}, {}});
  EXPECT_TRUE(has(f.gids, gid));
  EXPECT_FALSE(f.narrowed);
  // Deny someone else: the group becomes its members (nobody, by primary group) without the denied.
  f = ipc_peer_filter(PeerPolicy{{}, {gid}, {4242}});
  EXPECT_TRUE(f.gids.empty());
  EXPECT_TRUE(f.narrowed);
  EXPECT_TRUE(has(f.uids, nobody->pw_uid));
  // Deny nobody itself: its group must not let it in.
  f = ipc_peer_filter(PeerPolicy{{}, {gid}, {nobody->pw_uid}});
  EXPECT_TRUE(f.gids.empty());
  EXPECT_FALSE(has(f.uids, nobody->pw_uid));
}

}  // namespace
}  // namespace vks::server
