#include "server/servable_files.h"

#include <filesystem>
#include <system_error>

namespace vks::server {

// Interim: --models-dir only, by file stem (the pull cache joins when the model store below the
// server lists it).
std::vector<ServableFile> servable_files(const ServerOptions& options) {
  std::vector<ServableFile> out;
  for (const std::string& dir : options.models_dirs) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::filesystem::path& p = entry.path();
      if (p.extension() != ".gguf" || !entry.is_regular_file(ec)) continue;
      ServableFile f;
      f.name = p.stem().string();
      f.path = p.string();
      f.size_bytes = entry.file_size(ec);
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace vks::server
