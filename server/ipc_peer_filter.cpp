#include "server/ipc_peer_filter.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace vks::server {

namespace {

bool contains(const std::vector<uint32_t>& list, uint32_t value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

void add_unique(std::vector<uint32_t>& list, uint32_t value) {
  if (!contains(list, value)) list.push_back(value);
}

// Users whose primary group is in `gids` or who are listed members of one of them.
std::vector<uint32_t> members_of(const std::vector<uint32_t>& gids) {
  std::vector<std::string> names;
  for (const uint32_t gid : gids) {
    if (const group* g = getgrgid(gid)) {
      for (char** member = g->gr_mem; member != nullptr && *member != nullptr; ++member) names.emplace_back(*member);
    }
  }
  std::vector<uint32_t> uids;
  setpwent();
  while (const passwd* pw = getpwent()) {
    if (contains(gids, pw->pw_gid) || std::find(names.begin(), names.end(), pw->pw_name) != names.end()) {
      add_unique(uids, pw->pw_uid);
    }
  }
  endpwent();
  return uids;
}

}  // namespace

IpcPeerFilter ipc_peer_filter(const PeerPolicy& policy) {
  IpcPeerFilter filter;
  std::vector<uint32_t> allowed = {static_cast<uint32_t>(getuid()), 0u};  // always, unless denied
  for (const uint32_t uid : policy.allow_uids) add_unique(allowed, uid);
  if (!policy.allow_gids.empty()) {
    if (policy.deny_uids.empty()) {
      filter.gids = policy.allow_gids;
    } else {
      for (const uint32_t uid : members_of(policy.allow_gids)) add_unique(allowed, uid);
      filter.narrowed = true;
    }
  }
  for (const uint32_t uid : allowed) {
    if (!contains(policy.deny_uids, uid)) filter.uids.push_back(uid);
  }
  // No process runs as uid (uid_t)-1: a filter that admits no one, instead of an empty one that
  // would admit everyone.
  if (filter.uids.empty() && filter.gids.empty()) filter.uids.push_back(static_cast<uint32_t>(-1));
  return filter;
}

}  // namespace vks::server
