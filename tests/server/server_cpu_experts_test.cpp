// vkstreamd --cpu-experts (issue 30): an MoE model on Vulkan with its first layer's experts in host
// memory, run on the CPU, serves the same greedy completion as with every expert on the device,
// and the load log and `stats` say the split.
#include <gtest/gtest.h>
#include <signal.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

struct Served {
  std::vector<TokenId> ids;
  int32_t cpu_expert_layers = -1;  // as `stats` says
  std::string log;
};

Served serve_greedy(const std::vector<std::string>& args) {
  TempDir dir;
  DaemonConfig config;
  config.dir = dir.path;
  config.with_model = false;
  config.extra_args = {"--model", model_path("qwen3moe-tiny.gguf"), "--vulkan", "--ctx-size", "1024"};
  config.extra_args.insert(config.extra_args.end(), args.begin(), args.end());
  DaemonProcess daemon;
  daemon.start(config);
  Served out;
  if (!daemon.wait_ready(240)) {
    out.log = daemon.log();
    return out;
  }
  UdsClient client;
  if (client.connect(daemon.socket_path())) {
    const std::optional<proto::ServerMessage> m = request(client, greedy_request(24, true));
    const auto* accepted = m ? std::get_if<proto::AcceptedAnswer>(&m->body) : nullptr;
    StreamCollector stream{accepted != nullptr ? accepted->id : ""};
    if (accepted != nullptr && collect(client, stream, 60000) && stream.complete()) out.ids = stream.ids();
    const std::optional<proto::ServerMessage> stats = request(client, simple(proto::StatsRequest{}, 2));
    if (const auto* answer = stats ? std::get_if<proto::StatsAnswer>(&stats->body) : nullptr) {
      out.cpu_expert_layers = answer->stats.cpu_expert_layers;
    }
  }
  daemon.signal(SIGTERM);
  daemon.wait_exit(30);
  out.log = daemon.log();
  return out;
}

TEST(ServerCpuExperts, OneLayersExpertsOnTheCpuServeThePlainCompletion) {
  const Served plain = serve_greedy({});
  if (plain.log.find("no Vulkan device") != std::string::npos) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: " << plain.log);
  ASSERT_EQ(plain.ids.size(), 24u) << plain.log;
  EXPECT_NE(plain.log.find("experts of 0 of 2 expert layers on the CPU"), std::string::npos) << plain.log;
  EXPECT_EQ(plain.cpu_expert_layers, 0);
  const Served split = serve_greedy({"--cpu-experts", "1"});
  EXPECT_NE(split.log.find("experts of 1 of 2 expert layers on the CPU"), std::string::npos) << split.log;
  EXPECT_EQ(split.cpu_expert_layers, 1) << split.log;
  EXPECT_EQ(split.ids, plain.ids) << split.log;
}

TEST(ServerCpuExperts, ABadCountIsRefusedAtStart) {
  TempDir dir;
  DaemonConfig config;
  config.dir = dir.path;
  config.extra_args = {"--cpu-experts", "some"};
  DaemonProcess daemon;
  daemon.start(config);
  EXPECT_NE(daemon.wait_exit(30), 0);
  EXPECT_NE(daemon.log().find("expected auto, all or a count of layers"), std::string::npos) << daemon.log();
}

}  // namespace
}  // namespace vks::test
