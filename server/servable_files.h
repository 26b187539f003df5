#pragma once
// The GGUF files a daemon may serve by name: --models-dir folders and the pull cache.
#include <vector>

#include "server/model_set.h"
#include "server/server_options.h"

namespace vks::server {

std::vector<ServableFile> servable_files(const ServerOptions& options);

}  // namespace vks::server
