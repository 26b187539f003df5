#include "server/servable_files.h"

#include <spdlog/spdlog.h>

#include "engine/common/error.h"
#include "store/model_cache.h"

namespace vks::server {

std::vector<store::CatalogModel> servable_files(const ServerOptions& options) {
  std::string cache_dir;
  if (options.serve_model_cache) {
    try {
      cache_dir = store::model_cache_dir();
    } catch (const Error& e) {  // no $HOME nor $XDG_CACHE_HOME: nothing pulled to serve
      spdlog::debug("no model cache to serve: {}", e.what());
    }
  }
  return store::scan_servable_models(options.models_dirs, cache_dir);
}

}  // namespace vks::server
