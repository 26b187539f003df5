#pragma once
// The models a daemon can serve, by name, and the ones it has loaded: where each comes from, its
// ServedModel while loaded, the requests waiting for its load, its requests in flight and when it
// was last used (the residency policy's inputs, server/model_residency.h). Loop thread only.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/errors.h"
#include "protocol/responses.h"
#include "server/itl_histogram.h"
#include "server/model_residency.h"
#include "store/model_catalog.h"

namespace vks::chat {
struct ModelChatTemplate;
}

namespace vks::server {

struct ServedModel;

struct ModelSlot {
  store::CatalogModel file;
  bool pinned = false;                   // --model: loaded at start, never evicted
  std::shared_ptr<ServedModel> served;   // null unless loaded
  proto::ModelInfo info;                 // while loaded
  // What the GGUF header says (read once per file, off the loop): listings of a model not loaded.
  std::optional<proto::ModelInfo> header;
  std::string header_quantization;
  std::shared_ptr<const chat::ModelChatTemplate> header_template;  // null until read, or unreadable
  bool header_pending = false;
  bool loading = false;
  // Continuations of requests waiting for the load: run on the loop thread with the load's error
  // (null when it loaded).
  std::vector<std::function<void(const proto::ProtocolError*)>> waiters;
  int32_t running = 0;                   // requests submitted to its engine and not finished
  ResidencyClock::time_point last_used{};
  double keep_alive_s = 300;             // of the last request that named it
  bool unload_requested = false;         // unload once idle (`unload`, keep_alive 0)
  double load_ms = 0;
  ResidencyClock::time_point loaded_at{};
  uint64_t resident_bytes = 0;           // weights + KV pool + recurrent states, while loaded (estimated before)
  uint64_t device_bytes = 0;             // ... of which in a discrete GPU's memory (the rest in the host's)
  ItlHistogram itl;                      // its token events since the daemon started (across loads)

  bool loaded() const { return served != nullptr; }
  uint64_t host_bytes() const { return resident_bytes - device_bytes; }
  void set_resident(const ModelCost& cost) {
    resident_bytes = cost.host_bytes + cost.device_bytes;
    device_bytes = cost.device_bytes;
  }
  // Idle: loaded, nothing in flight on its engine, nothing being prepared for it (only this slot
  // holds its ServedModel; off-loop work keeps a reference while it tokenizes or renders).
  bool idle() const { return served != nullptr && running == 0 && served.use_count() == 1; }
  std::optional<ResidencyClock::time_point> expires_at() const;
};

class ModelSet {
 public:
  // Adds `file` as a pinned model (--model), loaded already; it is the default.
  ModelSlot& add_pinned(store::CatalogModel file, std::shared_ptr<ServedModel> served, proto::ModelInfo info);
  // Replaces the servable files: new names are added, loaded or loading models stay even if their
  // file is gone, unloaded ones whose file is gone are dropped.
  void set_files(const std::vector<store::CatalogModel>& files);

  // The slot a request's `model` names: the name, "name:latest", the file name or its stem; ""
  // = the default (the first pinned model, else the only servable one). Null when none matches.
  ModelSlot* find(const std::string& requested);
  // The slot of exactly this name (a name find() gave), or null.
  ModelSlot* named(const std::string& name) const;
  // Every name, quoted, for an error that lists them: "'a', 'b'".
  std::string names() const;
  const std::vector<std::unique_ptr<ModelSlot>>& slots() const { return slots_; }
  std::vector<ModelSlot*> loaded() const;
  int32_t loaded_count() const;
  int32_t loaded_unpinned_count() const;
  // The residency policy's view of the loaded models.
  std::vector<ResidentModel> resident() const;

 private:
  std::vector<std::unique_ptr<ModelSlot>> slots_;  // pinned first, then by name
};

}  // namespace vks::server
