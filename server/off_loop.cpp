#include "server/off_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <utility>

#include "engine/common/error.h"

namespace vks::server {

namespace {

// libuv's own reading of UV_THREADPOOL_SIZE (src/threadpool.c): 4 unless set, clamped to 1..1024.
size_t pool_threads() {
  const char* v = std::getenv("UV_THREADPOOL_SIZE");
  const long n = v != nullptr ? std::strtol(v, nullptr, 10) : 4;
  return static_cast<size_t>(std::clamp(n, 1L, 1024L));
}

}  // namespace

struct OffLoop::Task {
  uv_work_t req{};
  uv_loop_t* loop = nullptr;
  OffLoop* owner = nullptr;
  std::string key;
  Work work;
  Done done;
  CancelFlag cancel;
  Cost cost = Cost::kBounded;
  std::exception_ptr error;
};

// Half the pool, so that the other half is always free for work of bounded cost (one thread when
// the pool has one: client-chosen work then waits its turn like everything else).
std::string what_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown failure";
  }
}

OffLoop::OffLoop() : max_client_chosen_(std::max<size_t>(1, pool_threads() / 2)) {}
OffLoop::~OffLoop() = default;

void OffLoop::run(uv_loop_t* loop, const std::string& key, Work work, Done done, CancelFlag cancel, Cost cost) {
  auto task = std::make_unique<Task>();
  task->req.data = task.get();
  task->loop = loop;
  task->owner = this;
  task->key = key;
  task->work = std::move(work);
  task->done = std::move(done);
  task->cost = cost;
  Client& client = clients_[key];
  ++client.busy;
  if (cancel) {
    client.cancels.push_back(cancel);
    task->cancel = std::move(cancel);
  }
  ++in_flight_;
  if (cost == Cost::kClientChosen && client_chosen_running_ >= max_client_chosen_) {
    waiting_.push_back(std::move(task));  // started by on_after_work when a client-chosen one ends
    return;
  }
  start(std::move(task));
}

void OffLoop::start(std::unique_ptr<Task> task) {
  if (task->cost == Cost::kClientChosen) ++client_chosen_running_;
  const int rc = uv_queue_work(task->loop, &task->req, &OffLoop::on_work, &OffLoop::on_after_work);
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
  if (task->owner->stopped_.load(std::memory_order_relaxed)) {
    task->error = std::make_exception_ptr(Error(ErrorCode::kCancelled, "the server is shutting down"));
    return;
  }
  if (task->cancel && task->cancel->load(std::memory_order_relaxed)) {  // its client left while it waited
    task->error = std::make_exception_ptr(Error(ErrorCode::kCancelled, "the client went away"));
    return;
  }
  try {
    task->work();
  } catch (...) {
    task->error = std::current_exception();
  }
}

void OffLoop::on_after_work(uv_work_t* req, int status) {
  std::unique_ptr<Task> task(static_cast<Task*>(req->data));
  OffLoop* owner = task->owner;
  if (task->cost == Cost::kClientChosen) {
    --owner->client_chosen_running_;
    // The next one waiting takes the thread (one whose client left meanwhile ends at once: on_work).
    if (!owner->waiting_.empty()) {
      std::unique_ptr<Task> next = std::move(owner->waiting_.front());
      owner->waiting_.pop_front();
      owner->start(std::move(next));
    }
  }
  if (task->cancel) {
    const auto it = owner->clients_.find(task->key);
    if (it != owner->clients_.end()) std::erase(it->second.cancels, task->cancel);
  }
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
  const std::string key = std::move(task->key);
  task.reset();
  owner->finish(key);
}

void OffLoop::finish(const std::string& key) {
  --in_flight_;
  auto it = clients_.find(key);
  if (it == clients_.end()) return;  // forgotten while its work ran
  --it->second.busy;
  // Handle deferred requests in order until one of them starts new work (busy again).
  while (true) {
    it = clients_.find(key);
    if (it == clients_.end() || it->second.busy > 0 || it->second.deferred.empty()) break;
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
  if (it != clients_.end() && it->second.busy == 0 && it->second.deferred.empty()) clients_.erase(it);
}

bool OffLoop::busy(const std::string& key) const {
  const auto it = clients_.find(key);
  return it != clients_.end() && it->second.busy > 0;
}

void OffLoop::hold(const std::string& key) {
  ++clients_[key].busy;
  ++in_flight_;
}

void OffLoop::release(const std::string& key) { finish(key); }

void OffLoop::defer(const std::string& key, Later later) { clients_[key].deferred.push_back(std::move(later)); }

void OffLoop::forget(const std::string& key) {
  const auto it = clients_.find(key);
  if (it == clients_.end()) return;
  it->second.deferred.clear();
  for (const CancelFlag& flag : it->second.cancels) flag->store(true, std::memory_order_relaxed);
  it->second.cancels.clear();
  if (it->second.busy == 0) clients_.erase(it);
}

void OffLoop::stop() {
  stopped_.store(true, std::memory_order_relaxed);
  for (auto& [key, client] : clients_) {
    for (const CancelFlag& flag : client.cancels) flag->store(true, std::memory_order_relaxed);
  }
}

}  // namespace vks::server
