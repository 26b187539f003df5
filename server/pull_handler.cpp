// Daemon: getting and removing models (msgpack `pull` / `delete`; HTTP's /api/pull and /api/delete
// go through the same pull_model / delete_model). A pull downloads into the model cache on a
// thread of its own (ModelPuller) and the model is servable as soon as it is there (rescan_models);
// a delete removes a model the daemon pulled, never a --models-dir file nor the pinned --model.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <system_error>

#include "engine/common/error.h"
#include "server/daemon.h"
#include "store/model_cache.h"
#include "store/model_catalog.h"
#include "store/pull_source.h"

namespace vks::server {
namespace fs = std::filesystem;

namespace {

proto::ProtocolError pull_error(const ModelPuller::Outcome& o, bool shutting_down) {
  switch (o.code) {
    case ErrorCode::kInvalidArgument:
      return proto::make_error(proto::WireError::kInvalidField, o.error, "model");
    case ErrorCode::kNotFound:
      return proto::make_error(proto::WireError::kNotFound, o.error, "model");
    case ErrorCode::kCancelled:
      if (shutting_down) {
        return proto::make_error(proto::WireError::kShuttingDown,
                                 "the server is shutting down: " + o.error + "; pull again after it restarts to resume it");
      }
      return proto::make_error(proto::WireError::kCancelled, o.error, "model");
    default:
      return proto::make_error(proto::WireError::kPullFailed, o.error, "model");
  }
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return a == b || fs::equivalent(a, b, ec);
}

// Removes `path`, then its folders up to (not including) `cache_dir` while they are empty (the
// owner/repo folders `vkstream pull` made). Throws vks::Error (kIo).
void remove_pulled_file(const std::string& path, const std::string& cache_dir) {
  std::error_code ec;
  if (!fs::remove(path, ec) && ec) throw Error(ErrorCode::kIo, "cannot remove " + path + ": " + ec.message());
  const fs::path root = fs::path(cache_dir).lexically_normal();
  for (fs::path dir = fs::path(path).parent_path().lexically_normal(); !dir.empty() && dir != root && dir.string().size() > root.string().size();
       dir = dir.parent_path()) {
    if (!fs::is_empty(dir, ec) || ec || !fs::remove(dir, ec)) break;
  }
}

}  // namespace

void Daemon::start_puller() {
  if (!options_.serve_model_cache) return;
  try {
    pull_cache_dir_ = store::model_cache_dir();
  } catch (const Error& e) {  // no $HOME nor $XDG_CACHE_HOME: pulls answer why not
    spdlog::debug("pulls are off: {}", e.what());
    return;
  }
  puller_ = std::make_unique<ModelPuller>(&loop_, pull_cache_dir_);
}

void Daemon::pull_model(const std::string& name, ModelPuller::OnProgress progress, PullDone done) {
  touch();
  if (phase_ != Phase::kServing) {
    const proto::ProtocolError e =
        proto::make_error(proto::WireError::kShuttingDown, "the server is shutting down; retry after it restarts");
    return done(nullptr, &e);
  }
  if (!puller_) {
    const proto::ProtocolError e = proto::make_error(
        proto::WireError::kUnsupported,
        "this server does not serve the model cache (--no-model-cache, or none of VKSTREAM_CACHE_DIR, "
        "XDG_CACHE_HOME, HOME is set), so a pulled model could not be served: pull with `vkstream pull` and pass "
        "--model, or start vkstreamd without --no-model-cache",
        "model");
    return done(nullptr, &e);
  }
  try {
    (void)store::parse_pull_source(name);  // a name that is no source is answered at once
  } catch (const Error& e) {
    const proto::ProtocolError pe = proto::make_error(proto::WireError::kInvalidField, e.what(), "model");
    return done(nullptr, &pe);
  }
  // (Idle exit waits for running pulls itself: housekeeping checks puller_->running().)
  auto watch = progress ? ModelPuller::OnProgress([this, progress = std::move(progress)](const ModelPuller::Progress& p) {
    if (handles_open_) progress(p);
  })
                        : ModelPuller::OnProgress();
  puller_->pull(name, std::move(watch), [this, name, done = std::move(done)](const ModelPuller::Outcome& o) {
    if (!handles_open_) return;
    touch();
    if (!o.pulled) {
      const proto::ProtocolError e = pull_error(o, phase_ != Phase::kServing);
      return done(nullptr, &e);
    }
    rescan_models();  // servable from now on
    proto::PulledAnswer a;
    a.path = o.pulled->path;
    a.size_bytes = o.pulled->size_bytes;
    a.downloaded_bytes = o.pulled->downloaded_bytes;
    for (const auto& slot : models_.slots()) {
      if (same_file(slot->file.path, a.path)) a.model = slot->file.name;
    }
    if (a.model.empty()) {
      // Listed under another name's file (a --models-dir file of the same name comes first): name
      // it as the cache does, and say why requests will not reach it.
      for (const store::CatalogModel& m : store::scan_servable_models({}, pull_cache_dir_)) {
        if (same_file(m.path, a.path)) a.model = m.name;
      }
      spdlog::warn("pulled {} as {}, but another model of that name is served first", name, a.model);
    }
    done(&a, nullptr);
  });
}

void Daemon::delete_model(const std::string& name, std::function<void(const proto::ProtocolError*)> done) {
  touch();
  ModelSlot* slot = models_.find(name);
  if (slot == nullptr && !name.empty() && rescan_models()) slot = models_.find(name);
  if (slot == nullptr || name.empty()) {
    const proto::ProtocolError e = proto::make_error(
        proto::WireError::kNotFound, "model '" + name + "' not found; this server serves " + models_.names(), "model");
    return done(&e);
  }
  const std::string what = "model '" + slot->file.name + "' (" + slot->file.path + ")";
  std::optional<proto::ProtocolError> refused;
  if (slot->pinned) {
    refused = proto::make_error(proto::WireError::kUnsupported,
                                what + " is this daemon's --model: it is not the daemon's to delete", "model");
  } else if (!slot->file.pulled) {
    refused = proto::make_error(proto::WireError::kUnsupported,
                                what + " is a --models-dir file: vkstreamd deletes only the models it pulled into its "
                                       "cache; remove the file yourself",
                                "model");
  } else if (puller_ && puller_->writing(slot->file.path)) {
    refused = proto::make_error(proto::WireError::kOverloaded, what + " is being pulled; delete it when the pull is done",
                                "model");
  } else if (slot->loading || !slot->waiters.empty() || (slot->loaded() && !slot->idle())) {
    refused = proto::make_error(proto::WireError::kOverloaded,
                                what + " is in use (" + std::to_string(slot->running) +
                                    " request(s) running, or it is loading); retry when they finish",
                                "model");
  }
  if (refused) return done(&*refused);
  if (slot->loaded()) unload_now(*slot, "deleted");
  spdlog::info("deleting {}", what);
  off_loop_.run(
      &loop_, "model-delete", [path = slot->file.path, cache = pull_cache_dir_] { remove_pulled_file(path, cache); },
      [this, done = std::move(done)](std::exception_ptr error) {
        if (!handles_open_) return;
        rescan_models();  // gone from every listing
        if (!error) return done(nullptr);
        const proto::ProtocolError e = proto::make_error(proto::WireError::kUnsupported, what_of(error), "model");
        done(&e);
      });
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::PullRequest& r) {
  spdlog::info("{}: pull {}", from.describe(), r.model);
  ModelPuller::OnProgress progress;
  if (r.stream) {
    progress = [this, from, tag, model = r.model](const ModelPuller::Progress& p) {
      reply(from, proto::encode_answer(proto::PullProgressAnswer{model, p.completed, p.total}, tag));
    };
  }
  pull_model(r.model, std::move(progress), [this, from, tag](const proto::PulledAnswer* a, const proto::ProtocolError* e) {
    if (e != nullptr) return reply(from, proto::encode_error(*e, tag));
    reply(from, proto::encode_answer(*a, tag));
  });
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::DeleteRequest& r) {
  spdlog::info("{}: delete {}", from.describe(), r.model);
  delete_model(r.model, [this, from, tag, model = r.model](const proto::ProtocolError* e) {
    if (e != nullptr) {
      return reply(from, proto::encode_error(*e, tag, {}, e->code == proto::WireError::kOverloaded ? 1000 : 0));
    }
    reply(from, proto::encode_answer(proto::DeletedAnswer{model}, tag));
  });
}

}  // namespace vks::server
