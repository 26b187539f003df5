#include "server/model_loader.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "server/daemon.h"

namespace vks::server {

ModelLoader::ModelLoader(uv_loop_t* loop) : loop_(loop) {
  uv_async_init(loop_, &async_, &ModelLoader::on_async);
  async_.data = this;
  open_ = true;
}

ModelLoader::~ModelLoader() { close(); }

void ModelLoader::start(std::function<void()> body) {
  {
    std::lock_guard lock(mutex_);
    ++running_;
  }
  // Threads that ended are joined here, on the loop thread, so the list stays short.
  std::erase_if(workers_, [](Worker& w) {
    if (!w.done->load()) return false;
    w.thread.join();
    return true;
  });
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread thread([this, done, body = std::move(body)] {
    body();
    {
      std::lock_guard lock(mutex_);
      --running_;
    }
    done->store(true);
  });
  workers_.push_back(Worker{std::move(thread), std::move(done)});
}

void ModelLoader::load(Load work, Loaded done) {
  start([this, work = std::move(work), done = std::move(done)]() mutable {
    Finished f;
    f.done = std::move(done);
    try {
      f.model = work();
    } catch (...) {
      f.error = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    if (closing_) return;  // the daemon is going away: nobody takes the model (destroyed here)
    finished_.push_back(std::move(f));
    uv_async_send(&async_);
  });
}

void ModelLoader::dispose(std::shared_ptr<ServedModel> model) {
  start([model = std::move(model)]() mutable {
    try {
      model.reset();
    } catch (const std::exception& e) {
      spdlog::error("unloading a model: {}", e.what());
    } catch (...) {
      spdlog::error("unloading a model: unknown failure");
    }
  });
}

size_t ModelLoader::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

void ModelLoader::on_async(uv_async_t* async) {
  auto* self = static_cast<ModelLoader*>(async->data);
  try {
    self->deliver();
  } catch (const std::exception& e) {
    spdlog::error("model load completion: {}", e.what());
  } catch (...) {
    spdlog::error("model load completion: unknown failure");
  }
}

void ModelLoader::deliver() {
  std::vector<Finished> batch;
  {
    std::lock_guard lock(mutex_);
    batch.swap(finished_);
  }
  for (Finished& f : batch) {
    try {
      f.done(std::move(f.model), f.error);
    } catch (const std::exception& e) {
      spdlog::error("model load completion: {}", e.what());
    }
  }
}

void ModelLoader::close() {
  std::vector<Finished> unclaimed;  // loaded models nobody will serve: destroyed below, unlocked
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    unclaimed.swap(finished_);
  }
  if (open_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
    open_ = false;
  }
  for (Worker& w : workers_) {
    if (w.thread.joinable()) w.thread.join();
  }
  workers_.clear();
}

}  // namespace vks::server
