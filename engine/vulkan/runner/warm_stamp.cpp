#include "engine/vulkan/runner/warm_stamp.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string_view>

namespace vks {

std::string warm_stamp_path(const vk::DeviceInfo& device, uint64_t kernel_fingerprint) {
  if (device.type != VK_PHYSICAL_DEVICE_TYPE_CPU) return "";
  const char* dir = std::getenv("MESA_SHADER_CACHE_DIR");
  if (dir == nullptr || dir[0] == '\0') return "";
  if (const char* off = std::getenv("MESA_SHADER_CACHE_DISABLE"); off != nullptr) {
    const std::string_view v = off;
    if (v != "0" && v != "false" && v != "no" && !v.empty()) return "";
  }
  const uint64_t driver = std::hash<std::string>{}(device.name + '\n' + device.driver);
  // Mesa keeps its entries in <dir>/mesa_shader_cache: the stamp lives and goes with them.
  return fmt::format("{}/mesa_shader_cache/vkstream-warm-{:016x}-{:016x}", dir, driver, kernel_fingerprint);
}

bool warm_stamp_present(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_regular_file(path, ec);
}

void write_warm_stamp(const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::ofstream(path) << "a vkstreamd warm-up of these pipelines finished with this cache folder\n";
}

}  // namespace vks
