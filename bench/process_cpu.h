#pragma once
// CPU time of the whole process (a CPU Vulkan device's worker threads included): on a shared
// machine it shows the work a step or call costs even when other processes stretch its wall time.
#include <time.h>

namespace vks::bench {

inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace vks::bench
