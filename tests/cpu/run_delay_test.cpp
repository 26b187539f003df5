// RunDelay (engine/common/run_delay.h): what it reads is the second field of the kernel's
// schedstat of each thread, summed.
#include "engine/common/run_delay.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

namespace vks {
namespace {

// A thread's waiting for a CPU in seconds, read with a stream (the test's own parse).
double schedstat_delay(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  unsigned long long on_cpu = 0, waited = 0;
  in >> on_cpu >> waited;
  return in ? static_cast<double>(waited) * 1e-9 : -1.0;
}

TEST(RunDelay, SumsTheWaitingOfSleepingThreadsAsTheKernelKeepsIt) {
  if (schedstat_delay(gettid()) < 0) GTEST_SKIP() << "this kernel keeps no schedstat (CONFIG_SCHED_INFO)";
  // Two threads asleep on a condition variable: their statistics stay put while read.
  std::mutex m;
  std::condition_variable cv;
  bool stop = false;
  pid_t tids[2] = {0, 0};
  auto sleeper = [&](int i) {
    std::unique_lock<std::mutex> lock(m);
    tids[i] = gettid();
    cv.notify_all();
    cv.wait(lock, [&] { return stop; });
  };
  std::thread a(sleeper, 0), b(sleeper, 1);
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return tids[0] != 0 && tids[1] != 0; });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // both inside cv.wait by now
  const RunDelay delay({tids[0], tids[1]});
  EXPECT_TRUE(delay.available());
  const double first = schedstat_delay(tids[0]), both = first + schedstat_delay(tids[1]);
  EXPECT_DOUBLE_EQ(delay.seconds(1), first);
  EXPECT_DOUBLE_EQ(delay.seconds(2), both);
  EXPECT_DOUBLE_EQ(delay.seconds(5), both);  // no more threads than it holds
  EXPECT_EQ(delay.seconds(0), 0.0);
  {
    std::lock_guard<std::mutex> lock(m);
    stop = true;
  }
  cv.notify_all();
  a.join();
  b.join();
}

TEST(RunDelay, AThreadThatIsNotThereIsNotAvailable) {
  const RunDelay delay({0x7ffffff0});
  EXPECT_FALSE(delay.available());
  EXPECT_EQ(delay.seconds(1), 0.0);
}

}  // namespace
}  // namespace vks
