#pragma once
#include <string>

namespace vks::test {

// Folder of the shared test models: $VKSTREAM_MODELS, else ../shared/models beside the project root.
std::string models_dir();

// Full path of a file in models_dir().
std::string model_path(const std::string& file);

// A model or reference file name as a gtest parameter name ([A-Za-z0-9_] only: '-' and '.' become '_').
std::string test_name_of(std::string file);

// Folder where the build puts binaries (vkstreamd, vkstream, tools): $VKSTREAM_BUILD_DIR.
std::string build_dir();

}  // namespace vks::test
