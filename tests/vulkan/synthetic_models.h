#pragma once
// A folder of synthetic models for one test suite: `vks-make-model -p tiny` files made under the
// system's temp folder (one per process), removed with the object.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <string>
#include <system_error>

#include "tests/common/test_models.h"

namespace vks::test {

class SyntheticModels {
 public:
  explicit SyntheticModels(const std::string& suite)
      : dir_(std::filesystem::temp_directory_path() / fmt::format("vks_{}_{}", suite, ::getpid())) {
    std::filesystem::create_directories(dir_);
  }
  ~SyntheticModels() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  SyntheticModels(const SyntheticModels&) = delete;
  SyntheticModels& operator=(const SyntheticModels&) = delete;

  // <folder>/<name>.gguf made by `vks-make-model -q -p tiny <flags>`; "" when the tool is missing or
  // fails (build the vks-make-model target).
  std::string make(const std::string& name, const std::string& flags) const {
    const std::string tool = build_dir() + "/tools/vks-make-model";
    const std::string path = (dir_ / (name + ".gguf")).string();
    const std::string cmd = fmt::format("'{}' -q -o '{}' -p tiny {}", tool, path, flags);
    return std::system(cmd.c_str()) == 0 ? path : std::string();
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace vks::test
