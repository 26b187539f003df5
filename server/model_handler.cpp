// Daemon: the requests about the served models themselves (`model`, `models`, `load`, `unload`).
#include <spdlog/spdlog.h>

#include "server/daemon.h"

namespace vks::server {

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::ModelRequest& r) {
  // Answered without loading: a model not loaded is described by its name alone.
  ModelSlot* model = models_.find(r.model);
  if (model == nullptr) {
    reply_error(from, tag, proto::WireError::kNotFound,
                r.model.empty() ? "no default model: name one of " + models_.names()
                                : "model '" + r.model + "' not found; this server serves " + models_.names(),
                "model");
    return;
  }
  proto::ModelAnswer a;
  a.model = model->loaded() ? model->info : proto::ModelInfo{};
  if (!model->loaded()) a.model.name = model->file.name;
  reply(from, proto::encode_answer(a, tag));
}

proto::ModelsAnswer Daemon::models_answer() {
  proto::ModelsAnswer a;
  a.max_loaded = residency_.max_loaded;
  const ModelSlot* def = models_.find("");
  const auto now = std::chrono::steady_clock::now();
  for (const auto& slot : models_.slots()) {
    proto::ServableModelEntry e;
    e.name = slot->file.name;
    e.path = slot->file.path;
    e.size_bytes = slot->file.size_bytes;
    e.loaded = slot->loaded();
    e.loading = slot->loading;
    e.pinned = slot->pinned;
    e.is_default = slot.get() == def;
    e.running = slot->running;
    if (slot->loaded()) {
      e.resident_bytes = slot->resident_bytes;
      e.device = slot->served->device;
      if (const auto at = slot->expires_at()) {
        e.expires_in_ms = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(*at - now).count());
      }
    }
    a.models.push_back(std::move(e));
  }
  return a;
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::ModelsRequest&) {
  reply(from, proto::encode_answer(models_answer(), tag));
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::LoadRequest& r) {
  const bool was_loaded = [&] {
    const ModelSlot* m = models_.find(r.model);
    return m != nullptr && m->loaded();
  }();
  with_model_for(from, tag, r.model, r.keep_alive, [this, from, tag, was_loaded](ModelSlot& model) {
    proto::LoadedAnswer a;
    a.model = model.file.name;
    a.load_ms = was_loaded ? 0 : model.load_ms;
    reply(from, proto::encode_answer(a, tag));
    unload_expired_models();  // keep_alive 0: loaded, answered, and gone again as Ollama does
  });
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::UnloadRequest& r) {
  ModelSlot* model = models_.find(r.model);
  if (model == nullptr) {
    reply_error(from, tag, proto::WireError::kNotFound, "model '" + r.model + "' not found; this server serves " + models_.names(),
                "model");
    return;
  }
  if (model->pinned) {
    reply_error(from, tag, proto::WireError::kUnsupported,
                "model '" + model->file.name + "' is the daemon's --model: it stays loaded while the daemon runs", "model");
    return;
  }
  proto::UnloadedAnswer a;
  a.model = model->file.name;
  a.was_loaded = model->loaded() || model->loading;
  if (model->loaded()) {
    model->unload_requested = true;
    unload_expired_models();  // now when idle, else when its last request finishes
  }
  spdlog::info("{}: unload {}", from.describe(), model->file.name);
  reply(from, proto::encode_answer(a, tag));
}

}  // namespace vks::server
