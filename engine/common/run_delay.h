#pragma once
// How long threads of this process waited for a CPU: runnable but not running, because other
// threads (of any process) held the cores. The kernel's scheduler statistics keep it per thread
// (/proc/self/task/TID/schedstat, its second field, in nanoseconds; kernels with CONFIG_SCHED_INFO,
// which distributions enable). A worker beside another process busy on its core waited 0.30-0.47
// of the wall time in decode, on a quiet machine 0.00-0.01 (engine/cpu/decode_threads.h reads it).
#include <sys/types.h>

#include <vector>

namespace vks {

class RunDelay {
 public:
  // Opens each thread's statistics once; a thread whose file cannot be read counts 0.
  explicit RunDelay(const std::vector<pid_t>& tids);
  ~RunDelay();
  RunDelay(const RunDelay&) = delete;
  RunDelay& operator=(const RunDelay&) = delete;

  // Whether every thread's statistics could be opened.
  bool available() const { return available_; }
  // Seconds threads [0, n) have waited for a CPU, summed, since they started.
  double seconds(size_t n) const;

 private:
  std::vector<int> fds_;
  bool available_ = true;
};

}  // namespace vks
