// vkstreamd's command line: bad input gets a message that names the actual problem.
#include "server/server_options.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/common/error.h"
#include "server/uds_server.h"

namespace vks::server {
namespace {

std::string error_of(std::vector<std::string> args) {
  static char program[] = "vkstreamd";
  static char model_flag[] = "--model";
  static char model_path[] = "/nonexistent/model.gguf";
  std::vector<char*> argv{program, model_flag, model_path};
  for (std::string& a : args) argv.push_back(a.data());
  try {
    (void)parse_options(static_cast<int>(argv.size()), argv.data());
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// Fault 7 of issue 14: a malformed key was reported as "no CURVE key was given".
TEST(ServerOptions, MalformedCurveKeyIsCalledMalformed) {
  for (const std::string& key : std::vector<std::string>{"short", std::string(40, '~'), std::string(41, 'a')}) {
    const std::string e = error_of({"--router", "tcp://127.0.0.1:5555", "--curve-secret-key", key});
    EXPECT_NE(e.find("--curve-secret-key is malformed"), std::string::npos) << key << ": " << e;
    EXPECT_EQ(e.find("no CURVE key was given"), std::string::npos) << e;
  }
  const std::string missing = error_of({"--router", "tcp://127.0.0.1:5555"});
  EXPECT_NE(missing.find("no CURVE key was given"), std::string::npos) << missing;
}

// Fault 8 of issue 14: --allow-uid X used to replace the default list, refusing the owner and root.
TEST(PeerPolicy, AllowListAddsToOwnerAndRootUnlessDenied) {
  const uint32_t owner = getuid();
  const uint32_t other = owner == 54321 ? 54322 : 54321;
  const uint32_t stranger = other + 1;
  PeerPolicy policy{{other}, {}, {}};
  EXPECT_TRUE(policy.allows(ucred{1, owner, 1}));
  EXPECT_TRUE(policy.allows(ucred{1, 0, 0}));
  EXPECT_TRUE(policy.allows(ucred{1, other, 1}));
  EXPECT_FALSE(policy.allows(ucred{1, stranger, 1}));
  policy.deny_uids = {owner, 0};
  EXPECT_FALSE(policy.allows(ucred{1, owner, 1}));
  EXPECT_FALSE(policy.allows(ucred{1, 0, 0}));
  EXPECT_TRUE(policy.allows(ucred{1, other, 1}));
  const PeerPolicy defaults;
  EXPECT_TRUE(defaults.allows(ucred{1, owner, 1}));
  EXPECT_FALSE(defaults.allows(ucred{1, stranger, 1}));
}

}  // namespace
}  // namespace vks::server
