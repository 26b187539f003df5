#include "engine/common/thread_pool.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace vks {
namespace {

// How long a worker watches for the next job before it sleeps, and how long the caller watches for
// the last index to finish before it sleeps: longer than the gap between the jobs of one step,
// shorter than anything a user could see.
constexpr auto kWatch = std::chrono::microseconds(10);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls done() until it holds or kWatch has passed; whether it held.
template <class Done>
bool watch(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kWatch;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 64 == 63 && std::chrono::steady_clock::now() >= until) return done();
  }
}

}  // namespace

int ThreadPool::hardware_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = hardware_threads();
  participants_ = n_threads;
  asleep_.assign(static_cast<size_t>(n_threads - 1), 0);
  tids_.assign(static_cast<size_t>(n_threads - 1), 0);
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

void ThreadPool::set_participants(int n) {
  std::lock_guard<std::mutex> lock(mutex_);
  participants_ = std::clamp(n, 1, size());
}

std::vector<pid_t> ThreadPool::worker_tids() {
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [this] { return std::find(tids_.begin(), tids_.end(), 0) == tids_.end(); });
  return tids_;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (workers_.empty() || n == 1 || participants_ == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    n_ = n;
    next_.store(0, std::memory_order_relaxed);
    unfinished_.store(n, std::memory_order_relaxed);
    error_ = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
    for (int i = 1; i < participants_ && !wake; ++i) wake = asleep_[static_cast<size_t>(i - 1)] != 0;
  }
  if (wake) work_ready_.notify_all();
  run_indices(fn, n, /*worker=*/false);
  watch([this] {
    return unfinished_.load(std::memory_order_acquire) == 0 && active_.load(std::memory_order_acquire) == 0;
  });
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    work_done_.wait(lock, [this] { return unfinished_.load(std::memory_order_acquire) == 0 && active_ == 0; });
    fn_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::run_indices(const std::function<void(size_t)>& fn, size_t n, bool worker) {
  size_t completed = 0;
  for (;;) {
    if (worker && yield_to_ != nullptr && yield_to_->load(std::memory_order_relaxed) > 0) break;
    const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= n) break;
    try {
      fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();  // handed to the caller of parallel_for, never lost
    }
    ++completed;
  }
  // The last thread to complete an index wakes the caller (under the mutex, so the wake-up cannot
  // fall between the caller's check and its sleep).
  if (completed > 0 && unfinished_.fetch_sub(completed, std::memory_order_acq_rel) == completed) {
    std::lock_guard<std::mutex> lock(mutex_);
    work_done_.notify_all();
  }
}

void ThreadPool::worker_loop(int index) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tids_[static_cast<size_t>(index - 1)] = gettid();
  }
  work_done_.notify_all();  // worker_tids() may be waiting for it
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(size_t)>* fn = nullptr;
    size_t n = 0;
    watch([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // A job this worker sits out (index >= participants_) is seen and passed over.
      const auto ready = [&] {
        if (stopping_) return true;
        if (generation_.load(std::memory_order_relaxed) == seen || fn_ == nullptr) return false;
        if (index < participants_) return true;
        seen = generation_.load(std::memory_order_relaxed);
        return false;
      };
      if (!ready()) {
        asleep_[static_cast<size_t>(index - 1)] = 1;
        work_ready_.wait(lock, ready);
        asleep_[static_cast<size_t>(index - 1)] = 0;
      }
      if (stopping_) return;
      seen = generation_.load(std::memory_order_relaxed);
      fn = fn_;
      n = n_;
      ++active_;
    }
    run_indices(*fn, n, /*worker=*/true);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--active_ == 0) work_done_.notify_all();
    }
  }
}

}  // namespace vks
