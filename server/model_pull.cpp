#include "server/model_pull.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>

namespace vks::server {

struct ModelPuller::Job {
  std::string name;
  std::thread thread;
  std::vector<OnProgress> watchers;  // loop thread only
  std::vector<OnDone> waiters;       // loop thread only
  std::atomic<bool> cancel{false};
  std::mutex mutex;  // guards what follows (the pull's thread writes, the loop reads)
  Progress progress;
  bool progress_new = false;
  bool done = false;
  Outcome outcome;
};

ModelPuller::ModelPuller(uv_loop_t* loop, std::string cache_dir) : cache_dir_(std::move(cache_dir)) {
  uv_async_init(loop, &async_, &ModelPuller::on_async);
  async_.data = this;
  open_ = true;
}

ModelPuller::~ModelPuller() { close(); }

void ModelPuller::pull(const std::string& name, OnProgress progress, OnDone done) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) {
    auto job = std::make_shared<Job>();
    job->name = name;
    it = jobs_.emplace(name, job).first;
    spdlog::info("pulling {} into {}", name, cache_dir_);
    job->thread = std::thread([this, job] { run(*job); });
  }
  if (progress) it->second->watchers.push_back(std::move(progress));
  it->second->waiters.push_back(std::move(done));
}

void ModelPuller::run(Job& job) {
  Outcome outcome;
  auto publish = [&](const Progress& p) {
    {
      std::lock_guard lock(job.mutex);
      job.progress = p;
      job.progress_new = true;
    }
    post();
  };
  try {
    const store::PullJob planned = store::plan_pull(job.name, cache_dir_, &job.cancel);
    Progress p;
    p.digest = planned.plan.sha256.empty() ? std::string() : "sha256:" + planned.plan.sha256;
    p.file = planned.plan.cache_name;
    p.total = planned.plan.size_bytes.value_or(0);
    publish(p);
    // One writer per file: a pull of another name planning the same file waits for it.
    std::unique_lock dest_lock(dest_mutex_);
    while (dests_.count(planned.dest) != 0 && !job.cancel.load()) dest_free_.wait_for(dest_lock, std::chrono::milliseconds(200));
    if (job.cancel.load()) throw Error(ErrorCode::kCancelled, "the pull of " + job.name + " was cancelled");
    dests_.insert(planned.dest);
    dest_lock.unlock();
    struct Release {
      ModelPuller* self;
      std::string dest;
      ~Release() {
        {
          std::lock_guard lock(self->dest_mutex_);
          self->dests_.erase(dest);
        }
        self->dest_free_.notify_all();
      }
    } release{this, planned.dest};
    store::DownloadOptions options;
    options.cancel = &job.cancel;
    options.partial = store::PartialFile::kKeepIfResumable;
    options.on_progress = [&](uint64_t done, uint64_t total) {
      p.completed = done;
      p.total = total;
      publish(p);
    };
    outcome.pulled = store::run_pull(planned, options);
    if (p.completed != outcome.pulled->size_bytes) {  // cached already: say it is all there
      p.completed = p.total = outcome.pulled->size_bytes;
      publish(p);
    }
  } catch (const Error& e) {
    outcome.code = e.code();
    outcome.error = e.what();
  } catch (const std::exception& e) {
    outcome.code = ErrorCode::kInternal;
    outcome.error = e.what();
  } catch (...) {
    outcome.code = ErrorCode::kInternal;
    outcome.error = "unknown failure";
  }
  {
    std::lock_guard lock(job.mutex);
    job.outcome = std::move(outcome);
    job.done = true;
  }
  post();
}

void ModelPuller::post() {
  // The handle is closed only after every pull's thread has been joined (close()).
  uv_async_send(&async_);
}

void ModelPuller::on_async(uv_async_t* async) {
  auto* self = static_cast<ModelPuller*>(async->data);
  try {
    self->deliver();
  } catch (const std::exception& e) {
    spdlog::error("pull: {}", e.what());
  }
}

void ModelPuller::deliver() {
  std::vector<std::shared_ptr<Job>> finished;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    std::shared_ptr<Job> job = it->second;
    std::optional<Progress> progress;
    bool done = false;
    {
      std::lock_guard lock(job->mutex);
      if (job->progress_new) progress = job->progress;
      job->progress_new = false;
      done = job->done;
    }
    if (progress) {
      for (const OnProgress& w : job->watchers) {
        try {
          w(*progress);
        } catch (const std::exception& e) {
          spdlog::error("pull {}: progress: {}", job->name, e.what());
        }
      }
    }
    if (done) {
      finished.push_back(job);
      it = jobs_.erase(it);  // a new request for the name from here on starts a new pull
    } else {
      ++it;
    }
  }
  for (const std::shared_ptr<Job>& job : finished) {
    job->thread.join();  // it has published its outcome: only its return is left
    if (job->outcome.pulled) {
      spdlog::info("pulled {}: {} ({} bytes fetched)", job->name, job->outcome.pulled->path, job->outcome.pulled->downloaded_bytes);
    } else {
      spdlog::warn("pull of {} failed: {}", job->name, job->outcome.error);
    }
    for (const OnDone& d : job->waiters) {
      try {
        d(job->outcome);
      } catch (const std::exception& e) {
        spdlog::error("pull {}: {}", job->name, e.what());
      }
    }
  }
}

void ModelPuller::cancel_all(const std::string& why) {
  for (auto& [name, job] : jobs_) job->cancel = true;
  dest_free_.notify_all();
  Outcome cancelled;
  cancelled.code = ErrorCode::kCancelled;
  cancelled.error = why;
  for (auto& [name, job] : jobs_) {
    std::vector<OnDone> waiters;
    waiters.swap(job->waiters);
    job->watchers.clear();
    for (const OnDone& d : waiters) {
      try {
        d(cancelled);
      } catch (const std::exception& e) {
        spdlog::error("pull {}: {}", name, e.what());
      }
    }
  }
}

bool ModelPuller::writing(const std::string& path) const {
  std::lock_guard lock(dest_mutex_);
  return dests_.count(path) != 0;
}

void ModelPuller::close() {
  if (!open_) return;
  for (auto& [name, job] : jobs_) job->cancel = true;
  dest_free_.notify_all();
  for (auto& [name, job] : jobs_) {
    if (job->thread.joinable()) job->thread.join();
  }
  jobs_.clear();
  open_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
}

}  // namespace vks::server
