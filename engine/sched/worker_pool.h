#pragma once
// A few helper threads for the engine thread's per-request work in a step (sampling over large
// vocabularies is O(vocab) per sequence: with 16 sequences and 32k-128k tokens it is milliseconds).
// The calling thread takes part, so a pool of 1 runs everything inline.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vks::sched {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);  // threads in all, the caller included (<= 1: inline)
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs fn(i) for every i in [0, n) and returns when all are done. fn must not throw.
  void parallel_for(size_t n, const std::function<void(size_t)>& fn);
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

 private:
  void work();
  void drain(const std::function<void(size_t)>& fn, size_t n);

  std::mutex mu_;
  std::condition_variable start_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(size_t)>* fn_ = nullptr;  // guarded by mu_
  size_t n_ = 0;
  uint64_t generation_ = 0;
  int busy_ = 0;
  bool stop_ = false;
  std::atomic<size_t> next_{0};
};

}  // namespace vks::sched
