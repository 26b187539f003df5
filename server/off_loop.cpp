#include "server/off_loop.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <utility>

#include "engine/common/error.h"

namespace vks::server {

struct OffLoop::Task {
  uv_work_t req{};
  OffLoop* owner = nullptr;
  std::string key;
  Work work;
  Done done;
  std::exception_ptr error;
};

void OffLoop::run(uv_loop_t* loop, const std::string& key, Work work, Done done) {
  auto task = std::make_unique<Task>();
  task->req.data = task.get();
  task->owner = this;
  task->key = key;
  task->work = std::move(work);
  task->done = std::move(done);
  clients_[key].busy = true;
  ++in_flight_;
  const int rc = uv_queue_work(loop, &task->req, &OffLoop::on_work, &OffLoop::on_after_work);
  if (rc != 0) {
    // Never happens with a live loop; answer anyway so that the client is not left waiting.
    task->error = std::make_exception_ptr(
        Error(ErrorCode::kInternal, std::string("could not queue work off the loop: ") + uv_strerror(rc)));
    on_after_work(&task.release()->req, 0);
    return;
  }
  (void)task.release();  // owned by libuv until on_after_work
}

void OffLoop::on_work(uv_work_t* req) {
  auto* task = static_cast<Task*>(req->data);
  try {
    task->work();
  } catch (...) {
    task->error = std::current_exception();
  }
}

void OffLoop::on_after_work(uv_work_t* req, int status) {
  std::unique_ptr<Task> task(static_cast<Task*>(req->data));
  if (status == UV_ECANCELED && !task->error) {
    task->error = std::make_exception_ptr(Error(ErrorCode::kCancelled, "work was cancelled"));
  }
  try {
    task->done(task->error);
  } catch (const std::exception& e) {
    spdlog::error("off-loop completion failed: {}", e.what());
  } catch (...) {
    spdlog::error("off-loop completion failed with an unknown exception");
  }
  OffLoop* owner = task->owner;
  const std::string key = std::move(task->key);
  task.reset();
  owner->finish(key);
}

void OffLoop::finish(const std::string& key) {
  --in_flight_;
  auto it = clients_.find(key);
  if (it == clients_.end()) return;  // forgotten while its work ran
  it->second.busy = false;
  // Handle deferred requests in order until one of them starts new work (busy again).
  while (true) {
    it = clients_.find(key);
    if (it == clients_.end() || it->second.busy || it->second.deferred.empty()) break;
    Later later = std::move(it->second.deferred.front());
    it->second.deferred.pop_front();
    try {
      later();
    } catch (const std::exception& e) {
      spdlog::error("deferred request failed: {}", e.what());
    } catch (...) {
      spdlog::error("deferred request failed with an unknown exception");
    }
  }
  it = clients_.find(key);
  if (it != clients_.end() && !it->second.busy && it->second.deferred.empty()) clients_.erase(it);
}

bool OffLoop::busy(const std::string& key) const {
  const auto it = clients_.find(key);
  return it != clients_.end() && it->second.busy;
}

void OffLoop::defer(const std::string& key, Later later) { clients_[key].deferred.push_back(std::move(later)); }

void OffLoop::forget(const std::string& key) {
  const auto it = clients_.find(key);
  if (it == clients_.end()) return;
  it->second.deferred.clear();
  if (!it->second.busy) clients_.erase(it);
}

}  // namespace vks::server
