// make_runner and the backend rule: Vulkan on a GPU or when asked for, the CPU backend when forced,
// on a CPU-type device or without a device, clear errors otherwise.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/kernels/ops.h"
#include "engine/vulkan/runner/attn_kernels.h"
#include "engine/vulkan/runner/backend_choice.h"
#include "engine/vulkan/runner/runner_factory.h"
#include "engine/vulkan/runner/vulkan_runner.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_test_util.h"

namespace vks {
namespace {

RunnerOptions options() {
  RunnerOptions o;
  o.num_blocks = 64;
  o.max_step_tokens = 64;
  o.max_step_seqs = 4;
  return o;
}

TEST(RunnerFactory, ForcedCpuRunsTheReferenceAndAgreesWithVulkan) {
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  RunnerOptions o = options();
  o.force_cpu = true;
  auto cpu = make_runner(*model, o);
  EXPECT_EQ(cpu->device_name(), "cpu");
  EXPECT_EQ(cpu->num_blocks(), 64);
  const auto ref = test::read_id_lines(test::model_path("reference/stories260K_greedy_once_upon_a_time_n64.ids"));
  test::GenerateOptions g;
  g.n_gen = 20;
  test::GreedyDriver cpu_driver(*cpu, 1);
  const auto cpu_ids = cpu_driver.run({ref.at(0)}, g)[0].generated;
  EXPECT_EQ(cpu_ids, std::vector<int32_t>(ref.at(1).begin(), ref.at(1).begin() + 20));
  if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  o.force_cpu = false;
  o.force_vulkan = true;  // stories260K on a CPU device would otherwise follow the rule to the CPU
  auto gpu = make_runner(*model, o);
  EXPECT_NE(gpu->device_name(), "cpu");
  EXPECT_EQ(gpu->block_size(), 16);
  EXPECT_EQ(gpu->num_blocks(), 64);
  EXPECT_EQ(gpu->max_step_tokens(), 64);
  EXPECT_EQ(gpu->max_step_seqs(), 4);
  test::GreedyDriver gpu_driver(*gpu, 2);
  EXPECT_EQ(gpu_driver.run({ref.at(0)}, g)[0].generated, cpu_ids);
}

TEST(RunnerFactory, UnknownDeviceSelectorIsNotFound) {
  if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  RunnerOptions o = options();
  o.device = "no-such-device-xyz";
  try {
    make_runner(*model, o);
    FAIL() << "an unknown device selector was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
  }
}

// make_runner and the daemon's start-up probe (server/device_budget.h) select alike: --vulkan
// forbids the CPU fallback, --cpu sees no device, VKSTREAM_DEVICE fills an empty selector only.
TEST(RunnerFactory, DeviceSelectionAppliesALoadsRules) {
  RunnerOptions forced = options();
  forced.force_vulkan = true;
  EXPECT_FALSE(select_runner_device(forced).options.allow_cpu_fallback);
  EXPECT_TRUE(select_runner_device(options()).options.allow_cpu_fallback);
  RunnerOptions cpu = options();
  cpu.force_cpu = true;
  EXPECT_EQ(select_runner_device(cpu).device(), nullptr);
  if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  const DeviceSelection plain = select_runner_device(options());
  ASSERT_NE(plain.device(), nullptr);
  EXPECT_EQ(plain.selected, vk::select_device(plain.devices, ""));
  RunnerOptions named = options();
  named.device = std::to_string(plain.devices[plain.selected].index);
  const char* saved = std::getenv("VKSTREAM_DEVICE");
  const std::string saved_value = saved != nullptr ? saved : "";
  setenv("VKSTREAM_DEVICE", "no-such-device-xyz", 1);
  try {
    select_runner_device(options());
    ADD_FAILURE() << "VKSTREAM_DEVICE was not read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
  }
  EXPECT_EQ(select_runner_device(named).options.device, named.device);  // the option wins
  if (saved != nullptr) {
    setenv("VKSTREAM_DEVICE", saved_value.c_str(), 1);
  } else {
    unsetenv("VKSTREAM_DEVICE");
  }
}

TEST(RunnerFactory, BadOptionsAreInvalidArgument) {
  if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  RunnerOptions o = options();
  o.force_vulkan = true;
  o.block_size = 0;
  EXPECT_THROW(make_runner(*model, o), Error);
  o = options();
  o.force_vulkan = true;
  o.max_step_seqs = 0;
  EXPECT_THROW(make_runner(*model, o), Error);
}

vk::DeviceInfo device_of_type(VkPhysicalDeviceType type) {
  vk::DeviceInfo d;
  d.name = type == VK_PHYSICAL_DEVICE_TYPE_CPU ? "llvmpipe" : "some GPU";
  d.type = type;
  d.type_name = std::string(vk::device_type_name(type));
  return d;
}

TEST(BackendChoice, FollowsTheDocumentedRule) {
  const vk::DeviceInfo cpu_device = device_of_type(VK_PHYSICAL_DEVICE_TYPE_CPU);
  const RunnerOptions plain;
  constexpr uint64_t kSmall = 1'000'000, kLarge = 20'000'000'000;
  // A CPU device: the CPU backend at every size (its integer kernels outrun lavapipe on the same cores).
  EXPECT_EQ(choose_backend(&cpu_device, plain, kSmall).backend, Backend::kCpu);
  EXPECT_EQ(choose_backend(&cpu_device, plain, 600'000'000).backend, Backend::kCpu);
  EXPECT_EQ(choose_backend(&cpu_device, plain, kLarge).backend, Backend::kCpu);
  EXPECT_NE(choose_backend(&cpu_device, plain, kLarge).reason.find("--vulkan"), std::string::npos);
  EXPECT_NE(backend_rule_summary(cpu_device).find("the CPU backend"), std::string::npos) << backend_rule_summary(cpu_device);
  // Every kind of GPU: Vulkan.
  for (VkPhysicalDeviceType t : {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU,
                                 VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU, VK_PHYSICAL_DEVICE_TYPE_OTHER}) {
    const vk::DeviceInfo gpu = device_of_type(t);
    EXPECT_EQ(choose_backend(&gpu, plain, kSmall).backend, Backend::kVulkan) << gpu.type_name;
  }
  // No device: the CPU backend.
  EXPECT_EQ(choose_backend(nullptr, plain, kLarge).backend, Backend::kCpu);
  // What the user asked for wins over the rule.
  RunnerOptions o;
  o.force_vulkan = true;
  EXPECT_EQ(choose_backend(&cpu_device, o, kSmall).backend, Backend::kVulkan);
  o = RunnerOptions{};
  o.allow_cpu_fallback = false;
  EXPECT_EQ(choose_backend(&cpu_device, o, kSmall).backend, Backend::kVulkan);
  o = RunnerOptions{};
  o.device = "0";
  EXPECT_EQ(choose_backend(&cpu_device, o, kSmall).backend, Backend::kVulkan);
  o = RunnerOptions{};
  o.force_cpu = true;
  const vk::DeviceInfo gpu = device_of_type(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU);
  EXPECT_EQ(choose_backend(&gpu, o, kLarge).backend, Backend::kCpu);
  // The reason names the device and how to override, for the log.
  const std::string why = choose_backend(&cpu_device, plain, kSmall).reason;
  EXPECT_NE(why.find("llvmpipe"), std::string::npos) << why;
  EXPECT_NE(why.find("--vulkan"), std::string::npos) << why;
}

TEST(MatmulFamily, LanesOnGpusRowsOnCpuDevicesUnlessNamed) {
  const vk::DeviceInfo cpu_device = device_of_type(VK_PHYSICAL_DEVICE_TYPE_CPU);
  const vk::DeviceInfo gpu = device_of_type(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU);
  EXPECT_EQ(vk::choose_matmul_family(cpu_device, ""), vk::MatmulFamily::kRows);
  EXPECT_EQ(vk::choose_matmul_family(cpu_device, "auto"), vk::MatmulFamily::kRows);
  EXPECT_EQ(vk::choose_matmul_family(gpu, ""), vk::MatmulFamily::kLanes);
  EXPECT_EQ(vk::choose_matmul_family(device_of_type(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU), ""),
            vk::MatmulFamily::kLanes);
  EXPECT_EQ(vk::choose_matmul_family(cpu_device, "lanes"), vk::MatmulFamily::kLanes);
  EXPECT_EQ(vk::choose_matmul_family(gpu, "rows"), vk::MatmulFamily::kRows);
  EXPECT_THROW(vk::choose_matmul_family(gpu, "Lanes"), Error);
}

TEST(MatmulFamily, WideLanesTilesOnGpusUnlessNamed) {
  const vk::DeviceInfo cpu_device = device_of_type(VK_PHYSICAL_DEVICE_TYPE_CPU);
  const vk::DeviceInfo gpu = device_of_type(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU);
  EXPECT_EQ(vk::lanes_wide_tile_for(cpu_device, ""), 8u);
  EXPECT_EQ(vk::lanes_wide_tile_for(gpu, ""), 16u);
  EXPECT_EQ(vk::lanes_wide_tile_for(gpu, "32"), 32u);
  EXPECT_EQ(vk::lanes_wide_tile_for(cpu_device, "16"), 16u);
  EXPECT_EQ(vk::lanes_wide_tile_for(gpu, "8"), 8u);
  EXPECT_THROW(vk::lanes_wide_tile_for(gpu, "64"), Error);
  EXPECT_THROW(vk::lanes_wide_tile_for(gpu, "auto"), Error);
}

TEST(MatmulFamily, AttentionSplitKeysAreTheDevicesOrAMultipleOfATile) {
  const vk::DeviceInfo cpu_device = device_of_type(VK_PHYSICAL_DEVICE_TYPE_CPU);
  const vk::DeviceInfo gpu = device_of_type(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU);
  EXPECT_EQ(vk::attention_split_keys_for(cpu_device, ""), uint32_t{VKS_ATTN_SPLIT_KEYS});
  EXPECT_EQ(vk::attention_split_keys_for(gpu, ""), uint32_t{VKS_ATTN_SPLIT_KEYS});
  EXPECT_EQ(vk::attention_split_keys_for(gpu, "64"), 64u);
  EXPECT_EQ(vk::attention_split_keys_for(gpu, "512"), 512u);
  EXPECT_EQ(vk::attention_split_keys_for(gpu, "4096"), 4096u);
  for (const char* bad : {"0", "96", "100", "4160", "-64", "128k", " 128", "auto"}) {
    EXPECT_THROW(vk::attention_split_keys_for(gpu, bad), Error) << bad;
  }
}

TEST(RunnerFactory, APlainStartFollowsTheBackendRule) {
  const std::vector<vk::DeviceInfo> devices = vk::list_devices();
  if (devices.empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  if (std::getenv("VKSTREAM_DEVICE") != nullptr) GTEST_SKIP() << "VKSTREAM_DEVICE names a device: the rule yields to it";
  auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  const vk::DeviceInfo& picked = devices[vk::select_device(devices, "")];
  auto runner = make_runner(*model, options());
  // stories260K (1 MB of matrices): the CPU reference on a CPU device, Vulkan on a GPU.
  if (picked.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    EXPECT_EQ(runner->device_name(), "cpu") << picked.name;
  } else {
    EXPECT_EQ(runner->device_name(), picked.name);
  }
}

// The device router (moe_route_f32, moe_plan_i32) runs its loops in one invocation, bounded by
// lavapipe's 65,535 iterations on every device, so a runner whose steps could route more choices
// than that is refused at start with the sizes and what to change, not at the first big step.
TEST(RunnerFactory, ExpertRoutingPastTheLoopBudgetIsRefusedAtStart) {
  const std::vector<vk::DeviceInfo> devices = vk::list_devices();
  if (devices.empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  auto model = LlamaModel::load(test::model_path("qwen3moe-tiny.gguf"));  // 8 experts, 2 per token
  RunnerOptions o = options();
  o.force_vulkan = true;
  o.max_step_tokens = 20000;  // 40,000 routed choices a step: the plan's loops pass 65,535
  try {
    make_runner(*model, o);
    ADD_FAILURE() << "a runner past the router's loop budget was built";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("routing 2 of 8 experts for 20000 tokens"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lower max_step_tokens"), std::string::npos) << e.what();
  }
  o.max_step_tokens = 64;
  EXPECT_NO_THROW(make_runner(*model, o));
}

// Qwen3.5's Gated DeltaNet layers follow the backend rule like any model: a plain start on a CPU
// device picks the CPU backend, on a GPU Vulkan; --vulkan runs them on Vulkan, with a state slot
// per sequence a step may hold and the checkpoint slots asked for.
TEST(RunnerFactory, HybridRecurrentModelsFollowTheBackendRule) {
  auto model = LlamaModel::load(test::model_path("qwen35-tiny.gguf"));
  RunnerOptions cpu = options();
  cpu.force_cpu = true;
  auto on_cpu = make_runner(*model, cpu);
  EXPECT_EQ(on_cpu->device_name(), "cpu");
  EXPECT_EQ(on_cpu->recurrent_state_slots(), options().max_step_seqs);
  EXPECT_EQ(on_cpu->recurrent_checkpoint_slots(), options().state_checkpoints);
  const std::vector<vk::DeviceInfo> devices = vk::list_devices();
  if (devices.empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  if (std::getenv("VKSTREAM_DEVICE") != nullptr) GTEST_SKIP() << "VKSTREAM_DEVICE names a device: the rule yields to it";
  const vk::DeviceInfo& picked = devices[vk::select_device(devices, "")];
  auto plain = make_runner(*model, options());
  EXPECT_EQ(plain->device_name(), picked.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? std::string("cpu") : picked.name);
  RunnerOptions forced = options();
  forced.force_vulkan = true;
  forced.state_checkpoints = 3;
  auto vulkan = make_runner(*model, forced);
  EXPECT_EQ(vulkan->device_name(), picked.name);
  EXPECT_EQ(vulkan->recurrent_state_slots(), options().max_step_seqs);
  EXPECT_EQ(vulkan->recurrent_checkpoint_slots(), 3);
  vulkan->copy_recurrent_state(0, options().max_step_seqs + 2);  // into the last checkpoint slot
  try {
    vulkan->copy_recurrent_state(0, options().max_step_seqs + 3);
    ADD_FAILURE() << "a copy past the slots was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
  forced.state_slots = 2;  // fewer sequences live than a step may hold (the daemon's max_seqs)
  EXPECT_EQ(make_runner(*model, forced)->recurrent_state_slots(), 2);
  forced.state_slots = -1;
  EXPECT_THROW(make_runner(*model, forced), Error);
}

}  // namespace
}  // namespace vks
