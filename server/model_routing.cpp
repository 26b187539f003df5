// Daemon: the served models. A request names its model; the first request for a model that is not
// loaded loads it (on the ModelLoader's thread, never the loop's), later ones share it. Loading
// past --max-loaded-models or the memory budget first unloads the least recently used idle model;
// an idle model whose keep_alive ran out, or that was asked to go, unloads (on a thread of its own).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <exception>

#include "engine/chat/model_chat_template.h"
#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_config.h"
#include "engine/vulkan/runner/runner_options.h"
#include "server/daemon.h"
#include "server/device_budget.h"
#include "server/servable_files.h"

namespace vks::server {

namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

uint64_t default_loaded_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4 * 3;
}

proto::ModelInfo loaded_model_info(const ServedModel& served) {
  proto::ModelInfo info = model_info_from(served.config, served.tokenizer.get(), served.device);
  if (served.engine) {
    info.kv_type = served.engine->kv_type();
    info.kv_bytes_per_token = static_cast<int64_t>(served.engine->kv_bytes_per_token());
  }
  return info;
}

ModelCost resident_cost_of(const store::CatalogModel& file, const ServedModel& served) {
  uint64_t total = file.size_bytes;
  if (served.engine) total += served.engine->kv_pool_bytes() + served.engine->recurrent_state_bytes();
  if (!served.device_heap) return ModelCost{total, 0};
  const uint64_t on_host = std::min(served.host_weight_bytes, total);
  return ModelCost{on_host, total - on_host};
}

std::function<void()> Daemon::engine_notifier() const {
  return [guard = async_guard_] {
    std::lock_guard lock(guard->mutex);
    if (guard->async != nullptr) uv_async_send(guard->async);
  };
}

bool Daemon::rescan_models() {
  last_scan_ = std::chrono::steady_clock::now();
  std::vector<store::CatalogModel> files = servable_files(options_);
  std::erase_if(files, [&](const store::CatalogModel& f) {  // the pinned model is listed once, as pinned
    return std::any_of(models_.slots().begin(), models_.slots().end(),
                       [&](const auto& s) { return s->pinned && (s->file.name == f.name || s->file.path == f.path); });
  });
  const std::string before = models_.names();
  models_.set_files(files);
  read_headers(/*now=*/!loader_);  // at startup, before serving; later off the loop
  return models_.names() != before;
}

namespace {

struct Header {
  proto::ModelInfo info;
  std::string quantization;
  std::shared_ptr<const chat::ModelChatTemplate> chat_template;
};

// The model's chat template (probe renders bounded by the load's 2 s), so that a listing tells
// whether the model calls tools or thinks before it is loaded; null when it cannot be read (the
// load will say why).
std::shared_ptr<const chat::ModelChatTemplate> read_template(const gguf::GgufFile& file) {
  try {
    return std::make_shared<const chat::ModelChatTemplate>(chat::load_model_chat_template(file));
  } catch (const std::exception&) {
    return nullptr;
  }
}

// The GGUF's metadata only (mmap: the weights are not read); throws on a bad file. With its chat
// template unless `with_template` is false (at start-up, where the renders would delay serving).
Header read_header(const std::string& path, bool with_template) {
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const LlamaConfig config = LlamaConfig::from_gguf(file);
  return Header{model_info_from(config, nullptr, ""), config.quantization,
                with_template ? read_template(file) : nullptr};
}

}  // namespace

void Daemon::read_headers(bool now) {
  for (const auto& s : models_.slots()) {
    ModelSlot& slot = *s;
    if (slot.header || slot.header_pending || slot.loaded()) continue;
    if (now) {
      try {
        Header h = read_header(slot.file.path, /*with_template=*/false);  // read_templates() follows
        slot.header = std::move(h.info);
        slot.header_quantization = std::move(h.quantization);
        slot.header_template = std::move(h.chat_template);
      } catch (const std::exception& e) {
        slot.header = proto::ModelInfo{};  // listed by name only; its load will say what is wrong
        spdlog::warn("model {}: cannot read its header: {}", slot.file.name, e.what());
      }
      continue;
    }
    slot.header_pending = true;
    auto result = std::make_shared<Header>();
    off_loop_.run(
        &loop_, "models-catalogue", [result, path = slot.file.path] { *result = read_header(path, true); },
        [this, result, name = slot.file.name, path = slot.file.path](std::exception_ptr error) {
          for (const auto& candidate : models_.slots()) {
            if (candidate->file.name != name || candidate->file.path != path) continue;
            candidate->header_pending = false;
            candidate->header = error ? proto::ModelInfo{} : std::move(result->info);
            candidate->header_quantization = error ? std::string() : std::move(result->quantization);
            candidate->header_template = error ? nullptr : result->chat_template;
          }
        });
  }
}

void Daemon::read_templates() {
  for (const auto& s : models_.slots()) {
    if (!s->header || s->header_template || s->loaded()) continue;
    auto tmpl = std::make_shared<std::shared_ptr<const chat::ModelChatTemplate>>();
    off_loop_.run(
        &loop_, "models-catalogue", [tmpl, path = s->file.path] { *tmpl = read_template(gguf::GgufFile::open(path)); },
        [this, tmpl, name = s->file.name, path = s->file.path](std::exception_ptr error) {
          ModelSlot* slot = models_.named(name);
          if (!error && slot != nullptr && slot->file.path == path) slot->header_template = *tmpl;
        });
  }
}

ModelSlot* Daemon::slot_of_request(const std::string& id) {
  std::string model;
  if (const StreamEntry* e = registry_.find(id)) {
    model = e->model;
  } else if (const auto it = pending_embeds_.find(id); it != pending_embeds_.end()) {
    model = it->second.model;
  } else {
    return nullptr;
  }
  ModelSlot* slot = models_.named(model);
  return slot != nullptr && slot->loaded() ? slot : nullptr;
}

double Daemon::load_wait_ms(const ModelSlot& slot, std::chrono::steady_clock::time_point arrived) {
  if (arrived >= slot.loaded_at) return 0;
  return std::min(slot.load_ms, std::chrono::duration<double, std::milli>(slot.loaded_at - arrived).count());
}

void Daemon::note_use(ModelSlot& slot, std::optional<double> keep_alive) {
  slot.last_used = std::chrono::steady_clock::now();
  if (slot.pinned) return;  // loaded for the daemon's life
  slot.keep_alive_s = keep_alive.value_or(options_.keep_alive_s);
  slot.unload_requested = false;
}

ModelSlot* Daemon::find_model(const std::string& name) {
  ModelSlot* slot = models_.find(name);
  // A model pulled since the last look: look again (at most once a second, a folder listing).
  if (slot == nullptr && !name.empty() && std::chrono::steady_clock::now() - last_scan_ > std::chrono::seconds(1) &&
      rescan_models()) {
    slot = models_.find(name);
  }
  return slot;
}

proto::ProtocolError Daemon::model_not_found(const std::string& name) const {
  return proto::make_error(proto::WireError::kNotFound,
                           name.empty()
                               ? "this server serves several models and none is the default: name one of " + models_.names()
                               : "model '" + name + "' not found; this server serves " + models_.names(),
                           "model");
}

void Daemon::with_model(const std::string& name, std::optional<double> keep_alive, const std::string& hold_key,
                        ModelThen then) {
  ModelSlot* slot = find_model(name);
  if (slot == nullptr) {
    const proto::ProtocolError e = model_not_found(name);
    then(nullptr, &e);
    return;
  }
  if (phase_ != Phase::kServing) {
    const proto::ProtocolError e =
        proto::make_error(proto::WireError::kShuttingDown, "the server is shutting down; retry after it restarts");
    then(nullptr, &e);
    return;
  }
  note_use(*slot, keep_alive);
  if (slot->loaded()) {
    then(slot, nullptr);
    return;
  }
  if (!hold_key.empty()) off_loop_.hold(hold_key);
  slot->waiters.push_back([this, slot, hold_key, then = std::move(then)](const proto::ProtocolError* error) {
    then(error != nullptr ? nullptr : slot, error);
    if (!hold_key.empty()) off_loop_.release(hold_key);  // after `then`, which may have started more work
  });
  if (!slot->loading) start_load(*slot);
}

void Daemon::with_model_for(const ClientRef& from, const proto::Tag& tag, const std::string& name,
                            std::optional<double> keep_alive, std::function<void(ModelSlot&)> then) {
  with_model(name, keep_alive, owner_key(from),
             [this, from, tag, then = std::move(then)](ModelSlot* model, const proto::ProtocolError* error) {
               if (!handles_open_) return;
               if (error != nullptr) {
                 ++requests_rejected_;
                 spdlog::info("{}: rejected: {}", from.describe(), error->message);
                 reply(from, proto::encode_error(*error, tag, {}, error->code == proto::WireError::kOverloaded ? 1000 : 0));
                 return;
               }
               then(*model);
             });
}

uint64_t Daemon::kv_pool_estimate(const ModelSlot& slot) const {
  // --ctx-size N: N tokens of keys and values in every layer, at 4 bytes a value (the CPU
  // backend's F32 pool; a GPU's F16 pool takes half), from the header's shapes.
  const proto::ModelInfo& h = slot.header.value_or(proto::ModelInfo{});
  if (options_.kv_tokens <= 0 || h.n_layers <= 0 || h.n_kv_heads <= 0 || h.head_dim <= 0) {
    return RunnerOptions{}.kv_budget_bytes;  // the pool the runner sizes by default
  }
  return static_cast<uint64_t>(options_.kv_tokens) * static_cast<uint64_t>(h.n_layers) * 2 *
         static_cast<uint64_t>(h.n_kv_heads) * static_cast<uint64_t>(h.head_dim) * 4;
}

void Daemon::start_load(ModelSlot& slot) {
  // Before a load, what the model will hold: its weights, and the KV pool the runner sizes by default.
  // It goes where the device probe said models go (a discrete GPU's heap, else host memory); a split
  // of its experts into host memory is known after the load (make_room_beside then counts it).
  const uint64_t estimated = slot.file.size_bytes + kv_pool_estimate(slot);
  const ModelCost estimate = residency_.max_device_bytes != 0 ? ModelCost{0, estimated} : ModelCost{estimated, 0};
  const std::optional<std::vector<std::string>> evict = evictions_for(models_.resident(), estimate, residency_);
  if (!evict) {
    const proto::ProtocolError e = proto::make_error(
        proto::WireError::kOverloaded,
        "cannot load model '" + slot.file.name + "' now: the " + std::to_string(models_.loaded_count()) +
            " loaded model(s) are busy and no more fit (--max-loaded-models " + std::to_string(residency_.max_loaded) +
            ", " + budget_text() + "); retry when one finishes",
        "model");
    std::vector<std::function<void(const proto::ProtocolError*)>> waiters;
    waiters.swap(slot.waiters);
    for (auto& w : waiters) w(&e);
    return;
  }
  for (const std::string& name : *evict) {
    if (ModelSlot* victim = models_.find(name)) unload_now(*victim, "least recently used, to make room");
  }
  slot.loading = true;
  slot.set_resident(estimate);
  spdlog::info("loading model {} ({})", slot.file.name, slot.file.path);
  const std::string template_path = slot.pinned ? options_.chat_template_path : std::string();
  loader_->load(
      [path = slot.file.path, options = options_, template_path, share = compute_share_] {
        return std::make_shared<ServedModel>(load_served_model(path, options, template_path, share, nullptr));
      },
      [this, name = slot.file.name, started = std::chrono::steady_clock::now()](std::shared_ptr<ServedModel> served,
                                                                                 std::exception_ptr error) {
        on_model_loaded(name, std::move(served), error, started);
      });
}

void Daemon::on_model_loaded(const std::string& name, std::shared_ptr<ServedModel> served, std::exception_ptr error,
                             std::chrono::steady_clock::time_point started) {
  ModelSlot* slot = models_.named(name);
  if (slot == nullptr || !slot->loading) {  // cannot happen: a loading slot is never dropped
    if (served) loader_->dispose(std::move(served));
    return;
  }
  slot->loading = false;
  std::optional<proto::ProtocolError> failure;
  if (error) {
    failure = proto::make_error(proto::WireError::kModelLoadFailed, "model '" + name + "': " + what_of(error), "model");
    spdlog::error("loading model {} failed: {}", name, what_of(error));
    slot->set_resident(ModelCost{});
  } else if (!handles_open_ || phase_ != Phase::kServing) {
    failure = proto::make_error(proto::WireError::kShuttingDown, "the server is shutting down; retry after it restarts");
    loader_->dispose(std::move(served));
    slot->set_resident(ModelCost{});
  } else {
    served->engine->set_event_notifier(engine_notifier());
    slot->info = loaded_model_info(*served);
    slot->set_resident(resident_cost_of(slot->file, *served));
    slot->served = std::move(served);
    slot->load_ms = ms_since(started);
    slot->loaded_at = std::chrono::steady_clock::now();
    slot->last_used = std::chrono::steady_clock::now();
    spdlog::info("model {} loaded in {:.0f} ms on {} ({} MiB resident: {} MiB in host memory, {} MiB in device memory)",
                 name, slot->load_ms, slot->served->device, slot->resident_bytes >> 20, slot->host_bytes() >> 20,
                 slot->device_bytes >> 20);
    make_room_beside(*slot);  // measured now: it may take more than estimated, or another memory
  }
  std::vector<std::function<void(const proto::ProtocolError*)>> waiters;
  waiters.swap(slot->waiters);
  for (auto& w : waiters) {
    try {
      w(failure ? &*failure : nullptr);
    } catch (const std::exception& e) {
      spdlog::error("a request waiting for model {}: {}", name, e.what());
    }
  }
  unload_expired_models();  // keep_alive 0 and nothing submitted: it goes again
}

void Daemon::make_room_beside(const ModelSlot& slot) {
  std::vector<ResidentModel> others = models_.resident();
  std::erase_if(others, [&](const ResidentModel& m) { return m.name == slot.file.name; });
  const std::optional<std::vector<std::string>> evict =
      evictions_for(others, ModelCost{slot.host_bytes(), slot.device_bytes}, residency_);
  if (!evict) {
    spdlog::warn("model {} is loaded past the memory budget ({}): the other models are busy or pinned",
                 slot.file.name, budget_text());
    return;
  }
  for (const std::string& name : *evict) {
    if (ModelSlot* victim = models_.named(name)) unload_now(*victim, "least recently used, to make room");
  }
}

std::string Daemon::budget_text() const {
  std::string text = "--max-loaded-bytes " + std::to_string(residency_.max_bytes);
  if (residency_.max_device_bytes != 0) {
    text += ", the GPU's heap budget " + std::to_string(residency_.max_device_bytes);
  }
  return text;
}

void Daemon::probe_device_budget() {
  if (options_.force_cpu) return;  // models live in host memory
  RunnerOptions ro;
  ro.device = options_.device;
  ro.force_cpu = options_.force_cpu;
  ro.force_vulkan = options_.force_vulkan;
  ro.allow_cpu_fallback = !options_.no_cpu_fallback;
  auto budget = std::make_shared<std::optional<uint64_t>>();
  off_loop_.run(
      &loop_, "device-probe", [budget, ro] { *budget = probe_device_heap_budget(ro); },
      [this, budget](std::exception_ptr error) {
        if (error || !budget->has_value()) {
          spdlog::info("models live in host memory: budget {} MiB", residency_.max_bytes >> 20);
          return;
        }
        residency_.max_device_bytes = **budget;
        spdlog::info("models live in the GPU's memory: budget {} MiB there (nine tenths of its heap), {} MiB of host "
                     "memory", residency_.max_device_bytes >> 20, residency_.max_bytes >> 20);
      });
}

void Daemon::unload_now(ModelSlot& slot, const char* why) {
  if (!slot.loaded()) return;
  spdlog::info("unloading model {}: {}", slot.file.name, why);
  loader_->dispose(std::move(slot.served));  // leaves slot.served empty
  slot.info = proto::ModelInfo{};
  slot.set_resident(ModelCost{});
  slot.unload_requested = false;
}

void Daemon::unload_expired_models() {
  if (!loader_) return;
  const auto now = std::chrono::steady_clock::now();
  for (ModelSlot* slot : models_.loaded()) {
    if (slot->pinned || !slot->idle()) continue;
    const std::optional<std::chrono::steady_clock::time_point> at = slot->expires_at();
    if (at && *at <= now) unload_now(*slot, slot->unload_requested ? "unload requested" : "keep_alive ran out");
  }
}

}  // namespace vks::server
