#include "server/model_set.h"

#include <algorithm>

namespace vks::server {

std::optional<ResidencyClock::time_point> ModelSlot::expires_at() const {
  if (pinned) return std::nullopt;
  if (unload_requested) return last_used;
  return expiry_of(last_used, keep_alive_s);
}

ModelSlot& ModelSet::add_pinned(store::CatalogModel file, std::shared_ptr<ServedModel> served, proto::ModelInfo info) {
  auto slot = std::make_unique<ModelSlot>();
  slot->file = std::move(file);
  slot->pinned = true;
  slot->served = std::move(served);
  slot->info = std::move(info);
  slot->last_used = ResidencyClock::now();
  slot->keep_alive_s = -1;
  const auto first_unpinned = std::find_if(slots_.begin(), slots_.end(), [](const auto& s) { return !s->pinned; });
  return **slots_.insert(first_unpinned, std::move(slot));
}

void ModelSet::set_files(const std::vector<store::CatalogModel>& files) {
  std::erase_if(slots_, [&](const std::unique_ptr<ModelSlot>& s) {
    if (s->pinned || s->loaded() || s->loading) return false;
    return std::none_of(files.begin(), files.end(), [&](const store::CatalogModel& f) { return f.name == s->file.name; });
  });
  for (const store::CatalogModel& f : files) {
    const auto it = std::find_if(slots_.begin(), slots_.end(), [&](const auto& s) { return s->file.name == f.name; });
    if (it != slots_.end()) {
      if (!(*it)->loaded() && !(*it)->loading && ((*it)->file.path != f.path || (*it)->file.mtime_unix != f.mtime_unix)) {
        (*it)->file = f;  // a re-pulled file is what the next load reads
        (*it)->header.reset();
      }
      continue;
    }
    auto slot = std::make_unique<ModelSlot>();
    slot->file = f;
    slots_.push_back(std::move(slot));
  }
  const auto first_unpinned = std::find_if(slots_.begin(), slots_.end(), [](const auto& s) { return !s->pinned; });
  std::stable_sort(first_unpinned, slots_.end(), [](const auto& a, const auto& b) { return a->file.name < b->file.name; });
}

ModelSlot* ModelSet::find(const std::string& requested) {
  if (requested.empty()) {
    if (!slots_.empty() && slots_.front()->pinned) return slots_.front().get();
    return slots_.size() == 1 ? slots_.front().get() : nullptr;
  }
  // A resolved name (every request after the first, the HTTP front end's token texts): no copy.
  if (ModelSlot* exact = named(requested)) return exact;
  // The store's naming rules (name, name:latest, the file name, a pulled model's forms).
  std::vector<store::CatalogModel> files;
  files.reserve(slots_.size());
  for (const auto& s : slots_) files.push_back(s->file);
  const std::optional<store::CatalogModel> match = store::find_servable_model(files, requested);
  return match ? named(match->name) : nullptr;
}

ModelSlot* ModelSet::named(const std::string& name) const {
  for (const auto& s : slots_) {
    if (s->file.name == name) return s.get();
  }
  return nullptr;
}

std::string ModelSet::names() const {
  std::string out;
  for (const auto& s : slots_) out += (out.empty() ? "'" : ", '") + s->file.name + "'";
  return out.empty() ? "(none)" : out;
}

std::vector<ModelSlot*> ModelSet::loaded() const {
  std::vector<ModelSlot*> out;
  for (const auto& s : slots_) {
    if (s->loaded()) out.push_back(s.get());
  }
  return out;
}

int32_t ModelSet::loaded_count() const {
  return static_cast<int32_t>(std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->loaded(); }));
}

int32_t ModelSet::loaded_unpinned_count() const {
  return static_cast<int32_t>(
      std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->loaded() && !s->pinned; }));
}

std::vector<ResidentModel> ModelSet::resident() const {
  std::vector<ResidentModel> out;
  for (const auto& s : slots_) {
    if (!s->loaded() && !s->loading) continue;
    ResidentModel r;
    r.name = s->file.name;
    r.pinned = s->pinned;
    r.busy = s->loading || !s->idle();
    r.last_used = s->last_used;
    r.host_bytes = s->host_bytes();
    r.device_bytes = s->device_bytes;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace vks::server
