// Cold start (issue 13): the daemon compiles every kernel before READY and keeps Mesa's shader
// cache beside its pipeline cache, so a second start with that cache compiles nothing, skips the
// warm-up's steps (issue 37) and answers its first token within a second on stories260K.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>

#include "server/gpu_check.h"
#include "tests/common/vulkan_skip.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

namespace fs = std::filesystem;

size_t count_files(const fs::path& dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file()) ++n;
  }
  return n;
}

// Seconds from sending a greedy request until its first token event arrives (-1 on failure).
double first_token_seconds(DaemonProcess& daemon) {
  UdsClient client;
  if (!client.connect(daemon.socket_path())) return -1;
  StreamCollector stream;
  const auto t0 = std::chrono::steady_clock::now();
  if (!client.send(greedy_request(4))) return -1;
  double first = -1;
  const auto deadline = t0 + std::chrono::seconds(120);
  while (!stream.finished && std::chrono::steady_clock::now() < deadline) {
    const std::optional<proto::ServerMessage> m = client.recv(1000);
    if (!m) continue;
    if (const auto* accepted = std::get_if<proto::AcceptedAnswer>(&m->body); accepted && stream.id.empty()) {
      stream.id = accepted->id;
    }
    stream.add(*m);
    if (first < 0 && stream.token_events() > 0) {
      first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  return stream.finished ? first : -1;
}

// The device the daemon's model runs on, as its hello says ("" when it does not answer).
std::string served_device(DaemonProcess& daemon) {
  UdsClient client;
  if (!client.connect(daemon.socket_path())) return "";
  const std::optional<proto::ServerMessage> m = request(client, simple(proto::HelloRequest{}, 1));
  const auto* hello = m ? std::get_if<proto::HelloAnswer>(&m->body) : nullptr;
  return hello != nullptr ? hello->model.device : "";
}

bool has_warm_stamp(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename().string().rfind("vkstream-warm-", 0) == 0) return true;
  }
  return false;
}

TEST(ServerWarmStartTest, SecondStartCompilesNothingAndAnswersFast) {
  TempDir dir;
  const std::string cache_home = dir.path + "/cache";
  DaemonConfig config;
  config.dir = dir.path;
  // Empty MESA_SHADER_CACHE_DIR: the daemon picks the folder itself, as under the systemd units.
  config.env = {"XDG_CACHE_HOME=" + cache_home, "MESA_SHADER_CACHE_DIR="};
  // stories260K on a CPU device would follow the backend rule to the CPU backend, which compiles
  // nothing: this test is about Vulkan's caches.
  config.extra_args = {"--vulkan"};
  const fs::path mesa_cache = fs::path(cache_home) / "vkstream" / "mesa_shader_cache";
  // Seed it from the build's shared cache when the other tests filled one: the first start then
  // compiles only what is missing (the test checks the second start, not the first).
  if (const char* shared = std::getenv("MESA_SHADER_CACHE_DIR"); shared != nullptr && shared[0] != '\0') {
    std::error_code ec;
    fs::create_directories(mesa_cache, ec);
    fs::copy(shared, mesa_cache, fs::copy_options::recursive | fs::copy_options::skip_existing, ec);
  }

  std::string device;
  {
    DaemonProcess first;
    first.start(config);
    ASSERT_TRUE(first.wait_ready(240)) << first.log();
    if (first.log().find("CPU backend") != std::string::npos) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: " << first.log());
    device = served_device(first);
    ASSERT_FALSE(device.empty()) << first.log();
    // The request a user sent last time: its kernels are in the cache from now on.
    ASSERT_GT(first_token_seconds(first), 0) << first.log();
    first.signal(SIGTERM);
    ASSERT_EQ(first.wait_exit(30), 0) << first.log();
  }
  const size_t cached = count_files(mesa_cache);
  ASSERT_GT(cached, 0u) << "no shader cache written under " << mesa_cache;
  // Mesa's own default under XDG_CACHE_HOME is read-only under the units: the daemon must not use it.
  EXPECT_FALSE(fs::exists(fs::path(cache_home) / "mesa_shader_cache"));

  DaemonProcess second;
  second.start(config);
  ASSERT_TRUE(second.wait_ready(60)) << second.log();
  // Every kernel is in Mesa's cache (one variant a pipeline, texel_sizing.h). On a CPU-type device
  // the first start left its stamp there and the warm-up's steps, which would only compute, are
  // skipped (issue 37); a GPU has no stamp and warms up again, from its driver's cache.
  // Only a CPU-type device (Mesa's software rasterizers) gets the stamp (warm_stamp.h: a GPU driver
  // keeps its own cache, and a warm-up there is cheap).
  const bool cpu_type = server::is_cpu_device(device);
  std::printf("device: %s (%s)\n", device.c_str(), cpu_type ? "CPU type: warm stamp" : "GPU: no warm stamp");
  EXPECT_EQ(has_warm_stamp(mesa_cache), cpu_type) << device;
  EXPECT_EQ(second.log().find("warm-up skipped") != std::string::npos, cpu_type) << second.log();
  const double ttft = first_token_seconds(second);
  std::printf("second start: first token %.3f s after ready\n", ttft);
  EXPECT_GT(ttft, 0) << second.log();
  EXPECT_LT(ttft, 1.0) << second.log();
  EXPECT_EQ(count_files(mesa_cache), cached) << "the second start compiled kernels again";
  second.signal(SIGTERM);
  EXPECT_EQ(second.wait_exit(30), 0) << second.log();
}

}  // namespace
}  // namespace vks::test
