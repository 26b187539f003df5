// vkstreamd's command line: defaults that fit a new user (priority scheduling with aging unless
// --fcfs) and cached model names accepted by --model.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server/server_options.h"

namespace {

std::optional<vks::server::ServerOptions> parse(std::vector<std::string> args) {
  static char program[] = "vkstreamd";
  std::vector<char*> argv{program};
  for (std::string& a : args) argv.push_back(a.data());
  return vks::server::parse_options(static_cast<int>(argv.size()), argv.data());
}

TEST(ServerOptions, PrioritySchedulingIsTheDefaultAndFcfsTurnsItOff) {
  const auto def = parse({"--model", "m.gguf", "--socket", "/tmp/x.sock"});
  ASSERT_TRUE(def.has_value());
  EXPECT_TRUE(def->priority_policy);
  const auto fcfs = parse({"--model", "m.gguf", "--fcfs"});
  ASSERT_TRUE(fcfs.has_value());
  EXPECT_FALSE(fcfs->priority_policy);
  const auto old = parse({"--model", "m.gguf", "--priority"});
  ASSERT_TRUE(old.has_value());
  EXPECT_TRUE(old->priority_policy);
}

TEST(ServerOptions, ModelAcceptsACachedName) {
  const std::filesystem::path cache = std::filesystem::temp_directory_path() / ("vks-opt-cache-" + std::to_string(::getpid()));
  std::filesystem::create_directories(cache / "owner/repo");
  std::ofstream(cache / "owner/repo/m.Q4_0.gguf") << "x";
  ::setenv("VKSTREAM_CACHE_DIR", cache.c_str(), 1);
  const auto o = parse({"--model", "owner/repo:Q4_0"});
  const auto missing = parse({"--model", "/no/such/file.gguf"});
  ::unsetenv("VKSTREAM_CACHE_DIR");
  std::filesystem::remove_all(cache);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->model_path, (cache / "owner/repo/m.Q4_0.gguf").string());
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->model_path, "/no/such/file.gguf");  // the loader reports the missing file
}

}  // namespace
