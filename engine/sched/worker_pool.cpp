#include "engine/sched/worker_pool.h"

namespace vks::sched {

WorkerPool::WorkerPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void WorkerPool::drain(const std::function<void(size_t)>& fn, size_t n) {
  for (size_t i = next_.fetch_add(1); i < n; i = next_.fetch_add(1)) fn(i);
}

void WorkerPool::parallel_for(size_t n, const std::function<void(size_t)>& fn) {
  if (workers_.empty() || n <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  drain(fn, n);
  std::unique_lock lock(mu_);
  done_.wait(lock, [&] { return busy_ == 0; });
  fn_ = nullptr;
}

void WorkerPool::work() {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(size_t)>* fn;
    size_t n;
    {
      std::unique_lock lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
      n = n_;
    }
    drain(*fn, n);
    std::lock_guard lock(mu_);
    if (--busy_ == 0) done_.notify_all();
  }
}

}  // namespace vks::sched
