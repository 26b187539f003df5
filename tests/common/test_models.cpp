#include "tests/common/test_models.h"

#include <algorithm>
#include <cstdlib>

namespace vks::test {

std::string models_dir() {
  if (const char* env = std::getenv("VKSTREAM_MODELS"); env != nullptr && *env != '\0') return env;
  return std::string(VKS_SOURCE_DIR) + "/../shared/models";
}

std::string model_path(const std::string& file) { return models_dir() + "/" + file; }

std::string test_name_of(std::string file) {
  std::replace(file.begin(), file.end(), '-', '_');
  std::replace(file.begin(), file.end(), '.', '_');
  return file;
}

std::string build_dir() {
  if (const char* env = std::getenv("VKSTREAM_BUILD_DIR"); env != nullptr && *env != '\0') return env;
  return ".";
}

}  // namespace vks::test
