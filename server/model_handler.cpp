// Daemon: the requests about the served models themselves (`models`, `load`, `unload`).
#include <spdlog/spdlog.h>

#include <filesystem>
#include <system_error>

#include "server/daemon.h"

namespace vks::server {

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::ModelsRequest&) {
  proto::ModelsAnswer a;
  a.max_loaded = 1;
  proto::ServableModelEntry e;
  e.name = model_info_.name;
  e.path = options_.model_path;
  std::error_code ec;
  e.size_bytes = options_.model_path.empty() ? 0 : std::filesystem::file_size(options_.model_path, ec);
  e.loaded = served_.engine != nullptr;
  e.pinned = true;
  e.is_default = true;
  e.running = registry_.live_count();
  e.device = served_.device;
  a.models.push_back(std::move(e));
  reply(from, proto::encode_answer(a, tag));
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::LoadRequest& r) {
  reply_error(from, tag, proto::WireError::kUnsupported, "this server serves one model and cannot load '" + r.model + "'",
              "model");
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::UnloadRequest& r) {
  reply_error(from, tag, proto::WireError::kUnsupported, "this server serves one model and cannot unload '" + r.model + "'",
              "model");
}

}  // namespace vks::server
