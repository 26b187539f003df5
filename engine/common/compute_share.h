#pragma once
// The cores that the CPU backends of several loaded models share. A step that must be quick (a
// decode step: each sequence one token, or the few it verifies) marks itself urgent while it runs;
// the large steps of the other models (prefill chunks) then go on with their calling thread only,
// leaving the other cores to it. Without this, a 4k-token prefill of one model halved another's
// decode speed on two cores (both pools' threads shared them evenly: vks_bench_cross_model's p99
// token gap 2.07x its alone value); with it the decode keeps most of the machine and the prefill
// still advances on one thread. Only which thread runs which rows changes, never the arithmetic.
#include <atomic>

namespace vks {

class ComputeShare {
 public:
  // Marks one urgent step for its lifetime.
  class Urgent {
   public:
    explicit Urgent(ComputeShare& share) : share_(share) { share_.urgent_.fetch_add(1, std::memory_order_relaxed); }
    ~Urgent() { share_.urgent_.fetch_sub(1, std::memory_order_relaxed); }
    Urgent(const Urgent&) = delete;
    Urgent& operator=(const Urgent&) = delete;

   private:
    ComputeShare& share_;
  };

  // Positive while an urgent step runs (ThreadPool::yield_to reads it).
  const std::atomic<int>& urgent_steps() const { return urgent_; }

 private:
  std::atomic<int> urgent_{0};
};

}  // namespace vks
