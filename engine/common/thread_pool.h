#pragma once
// A small fixed pool of worker threads for data-parallel loops (the CPU reference's matrix
// products). The calling thread takes part in the work; parallel_for returns when every index has
// run. Which thread runs an index is unspecified, so each index must write only its own outputs.
#include <condition_variable>
#include <cstdint>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vks {

class ThreadPool {
 public:
  // n_threads counts the caller: 1 runs everything inline; 0 means hardware_threads().
  explicit ThreadPool(int n_threads = 0);
  // The hardware concurrency, at least 1.
  static int hardware_threads();
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(i) for i in [0, n). If any call throws, the first exception is rethrown here after
  // all started calls have finished. Not reentrant: fn must not call parallel_for on this pool.
  void parallel_for(size_t n, const std::function<void(size_t)>& fn);

 private:
  void worker_loop();
  void run_indices();  // takes indices until none are left

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  // The current job (guarded by mutex_).
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t n_ = 0;
  size_t next_ = 0;          // next index to hand out
  size_t unfinished_ = 0;    // indices handed out or waiting, not yet completed
  uint64_t generation_ = 0;  // bumped per job so sleeping workers notice new work
  std::exception_ptr error_;
  bool stopping_ = false;
};

}  // namespace vks
