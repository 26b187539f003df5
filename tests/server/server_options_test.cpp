// vkstreamd's command line: bad input gets a message that names the actual problem.
#include "server/server_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/common/error.h"

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

}  // namespace
}  // namespace vks::server
