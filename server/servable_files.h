#pragma once
// The GGUF files a daemon may serve by name: --models-dir folders and, unless --no-model-cache, the
// pull cache (store/model_catalog.h names them).
#include <vector>

#include "server/model_set.h"
#include "server/server_options.h"

namespace vks::server {

std::vector<store::CatalogModel> servable_files(const ServerOptions& options);

}  // namespace vks::server
