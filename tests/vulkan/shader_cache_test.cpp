// Mesa's disk cache across starts (issue 37): a second start of the same kernels, in a new
// instance, device and pipeline as a restarted daemon has, must find every variant the first start
// compiled. lavapipe compiles a variant per distinct key at a pipeline's first dispatch with it;
// before texel_sizing.h, a pipeline bound to buffers of two size classes had two, and the second's
// key changed from one start to the next, so every restart compiled again.
// Its own binary: MESA_SHADER_CACHE_DIR is read once, when the process's first instance loads the
// driver, and must name this test's empty folder.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/instance.h"
#include "engine/vulkan/core/kernel.h"
#include "tests/common/vulkan_skip.h"

namespace vks::vk::test {
namespace {

namespace fs = std::filesystem;

size_t cache_entries(const fs::path& dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file() && it->path().filename() != "index") ++n;
  }
  return n;
}

// One "start": a fresh device runs the texel probe over buffers of both size classes llvmpipe
// would key apart (16 KiB: a power of two with bits 8..15 zero; 86 KiB: neither), then the
// instance goes as vkstreamd's does at exit, which is when Mesa finishes its cache writes.
// Returns the device's type.
VkPhysicalDeviceType start() {
  VkPhysicalDeviceType type;
  {
    Device device = Device::create(DeviceOptions{"", 0, false});
    type = device.info().type;
    KernelRegistry kernels(device);
    const Kernel& probe = kernels.get("probe_texread_u32");
    for (uint64_t bytes : {uint64_t{16384}, uint64_t{88064}}) {
      Buffer data = device.create_buffer(bytes);
      Buffer out = device.create_buffer(64);
      const uint32_t p[4] = {16, 4, 0, 0};
      CommandBuffer cmd = device.create_command_buffer();
      cmd.begin();
      cmd.dispatch(probe, {data.view(), out.view()}, p, Groups{1, 1, 1});
      cmd.end();
      device.submit_and_wait(cmd);
    }
  }
  Instance::release_shared();
  return type;
}

TEST(ShaderCacheAcrossStarts, SecondStartCompilesNothing) {
  char tmpl[] = "/tmp/vks-shader-cache-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  setenv("MESA_SHADER_CACHE_DIR", dir.c_str(), 1);
  VkPhysicalDeviceType type;
  try {
    type = start();
  } catch (const Error& e) {
    fs::remove_all(dir);
    VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: " << e.what());
  }
  const size_t first = cache_entries(dir);
  if (type != VK_PHYSICAL_DEVICE_TYPE_CPU) {
    fs::remove_all(dir);
    GTEST_SKIP() << "a GPU driver compiles at pipeline creation; this is about lavapipe's variants";
  }
  ASSERT_GT(first, 0u) << "Mesa wrote no shader cache under " << dir;
  start();
  EXPECT_EQ(cache_entries(dir), first) << "the second start compiled variants the first had cached";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vks::vk::test
