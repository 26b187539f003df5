// The warm-up stamp's rule (warm_stamp.h): only CPU devices with Mesa's cache placed and enabled,
// and a name that changes with the driver and with the pipelines.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "engine/vulkan/runner/warm_stamp.h"
#include "tests/common/scoped_env.h"

namespace vks {
namespace {

using test::ScopedEnv;

vk::DeviceInfo device(VkPhysicalDeviceType type, const char* driver) {
  vk::DeviceInfo d;
  d.name = "llvmpipe (LLVM 15.0.6, 256 bits)";
  d.driver = driver;
  d.type = type;
  return d;
}

TEST(WarmStamp, OnlyForACpuDeviceWithMesasCachePlacedAndEnabled) {
  ScopedEnv dir("MESA_SHADER_CACHE_DIR", "/tmp/vks-stamp-test");
  ScopedEnv enabled("MESA_SHADER_CACHE_DISABLE", nullptr);
  const vk::DeviceInfo cpu = device(VK_PHYSICAL_DEVICE_TYPE_CPU, "Mesa 22.3.6 (LLVM 15.0.6)");
  const std::string path = warm_stamp_path(cpu, 42);
  EXPECT_EQ(path.rfind("/tmp/vks-stamp-test/mesa_shader_cache/vkstream-warm-", 0), 0u) << path;
  EXPECT_EQ(warm_stamp_path(device(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, "NVIDIA 580"), 42), "");
  EXPECT_NE(warm_stamp_path(cpu, 43), path);  // other pipelines
  EXPECT_NE(warm_stamp_path(device(VK_PHYSICAL_DEVICE_TYPE_CPU, "Mesa 23.0.0 (LLVM 15.0.6)"), 42), path);
  {
    ScopedEnv off("MESA_SHADER_CACHE_DISABLE", "true");
    EXPECT_EQ(warm_stamp_path(cpu, 42), "");
  }
  {
    ScopedEnv unset("MESA_SHADER_CACHE_DIR", nullptr);
    ASSERT_EQ(std::getenv("MESA_SHADER_CACHE_DIR"), nullptr);
    EXPECT_EQ(warm_stamp_path(cpu, 42), "");
  }
  {
    ScopedEnv empty("MESA_SHADER_CACHE_DIR", "");
    EXPECT_EQ(warm_stamp_path(cpu, 42), "");
  }
  EXPECT_FALSE(warm_stamp_present(""));
}

}  // namespace
}  // namespace vks
