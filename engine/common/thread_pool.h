#pragma once
// A small fixed pool of worker threads for data-parallel loops (the CPU matrix products). The
// calling thread takes part in the work; parallel_for returns when every index has run. Which
// thread runs an index is unspecified, so each index must write only its own outputs.
//
// Indices are claimed one at a time from an atomic counter, so a thread slowed down (another
// process on its core) simply claims fewer: nobody waits for a fixed share. A worker that finishes
// a job watches for the next one for a few microseconds (a TinyLlama decode step is some 110 short
// jobs in a row, and a wake-up from sleep costs about as much as one), then sleeps on a condition
// variable: the watch is bounded, so a loaded machine's cores stay with whoever needs them.
#include <sys/types.h>

#include <atomic>
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
  // all calls have finished (the others still run). Not reentrant: fn must not call parallel_for
  // on this pool.
  void parallel_for(size_t n, const std::function<void(size_t)>& fn);

  // How many threads (the caller counted, 1..size()) take indices of the jobs from here on: the
  // workers past that many sit them out, and at 1 the caller runs each job inline. Set between jobs,
  // by the thread that calls parallel_for (engine/cpu/decode_threads.h sets it per decode step).
  void set_participants(int n);
  int participants() const { return participants_; }  // the calling thread's view

  // The workers' kernel thread ids (for their scheduler statistics: engine/common/run_delay.h), in
  // worker order; waits until every worker has started.
  std::vector<pid_t> worker_tids();

  // While `*urgent` is positive (another model's latency-sensitive step runs: ComputeShare), the
  // workers stop taking indices of this pool's jobs and the calling thread finishes them alone;
  // nullptr: every thread always works. Set between jobs, by the thread that calls parallel_for.
  void yield_to(const std::atomic<int>* urgent) { yield_to_ = urgent; }

 private:
  void worker_loop(int index);
  // Claims and runs indices of the current job until none are left (a worker: or until it yields).
  void run_indices(const std::function<void(size_t)>& fn, size_t n, bool worker);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  // The current job (guarded by mutex_).
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t n_ = 0;
  std::atomic<uint64_t> generation_{0};  // bumped per job (under mutex_) so workers notice new work
  std::vector<uint8_t> asleep_;           // per worker: waiting on work_ready_ (guarded by mutex_)
  // Workers inside run_indices of the current job (changed under mutex_, read without it too): a
  // job ends only when none is, so none claims an index of the next job with this one's fn.
  std::atomic<int> active_{0};
  std::exception_ptr error_;
  bool stopping_ = false;
  const std::atomic<int>* yield_to_ = nullptr;  // published to workers with each job (under mutex_)
  int participants_ = 1;                        // written under mutex_, by the calling thread only
  std::vector<pid_t> tids_;                     // per worker: its thread id, 0 until started (mutex_)
  // Claimed without the mutex.
  std::atomic<size_t> next_{0};        // next index to hand out
  std::atomic<size_t> unfinished_{0};  // indices not yet completed
};

}  // namespace vks
