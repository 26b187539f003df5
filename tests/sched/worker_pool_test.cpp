#include "engine/sched/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

namespace vks::sched {
namespace {

TEST(WorkerPool, RunsEveryIndexExactlyOnce) {
  for (int threads : {0, 1, 2, 5}) {
    WorkerPool pool(threads);
    for (size_t n : {0u, 1u, 3u, 100u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      for (auto& h : hits) h = 0;
      pool.parallel_for(n, [&](size_t i) { ++hits[i]; });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n << " i " << i;
    }
  }
}

TEST(WorkerPool, UsesSeveralThreads) {
  WorkerPool pool(4);
  std::mutex mu;
  std::set<std::thread::id> seen;
  pool.parallel_for(64, [&](size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard lock(mu);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_GT(seen.size(), 1u);
  EXPECT_EQ(pool.threads(), 4);
}

}  // namespace
}  // namespace vks::sched
