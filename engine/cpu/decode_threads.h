#pragma once
// How many of the CPU runner's threads a decode step uses (ThreadPool::set_participants).
//
// A decode step streams the weights once: memory-bound, so one thread fewer loses little. Beside
// another process busy on a core, though, a worker sharing that core is descheduled while it holds
// part of a job, and the calling thread waits for it at the end of every job: TinyLlama-shape Q4_0
// at 2 threads decoded 0.76-0.77x its quiet speed beside a spinning process, where 1 thread decoded
// 0.98-1.03x its own, about 0.86x the 2 threads' quiet figure (vks_bench_cpu_reference
// --busy-pairs). The signal is the workers' waiting for a CPU (engine/common/run_delay.h): a share
// of the step's wall time per worker, 0.00-0.01 on a quiet machine, 0.30-0.47 beside the spinner.
//   - After each window of kWindow decode steps whose share is over kShedAbove, one thread fewer
//     (never under 1).
//   - Below all threads, every kProbeEvery decode steps a probe of kProbeWindow steps with one
//     thread more, kept if its share is under kShedAbove: a machine that becomes quiet again gets
//     its threads back within a fraction of a second; under load a probe costs its 2 steps.
// Prefill steps are compute-bound and gain from every thread even on a shared core; the runner
// gives them all. Which thread computes which rows changes no bits.
namespace vks {

class DecodeThreads {
 public:
  static constexpr double kShedAbove = 0.1;
  static constexpr int kWindow = 8;       // decode steps a decision reads
  static constexpr int kProbeWindow = 2;  // decode steps a probe reads
  static constexpr int kProbeEvery = 16;  // decode steps below all threads between probes

  explicit DecodeThreads(int max_threads);

  // Threads for the next decode step.
  int threads() const { return threads_; }

  // After a decode step run with threads(): the seconds its participating workers waited for a CPU,
  // summed, and the step's wall seconds.
  void record(double workers_waited, double wall);

 private:
  void start_window(int steps);

  int max_threads_;
  int threads_;
  int probe_from_ = 0;  // the threads before a probe; 0: not probing
  int steps_to_probe_ = kProbeEvery;
  int window_steps_ = kWindow;  // steps the current window still needs
  double waited_ = 0;           // worker-seconds the window's workers waited for a CPU
  double capacity_ = 0;         // worker-seconds of the window's steps (wall x workers)
};

}  // namespace vks
