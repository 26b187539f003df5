#include "engine/common/thread_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace vks {
namespace {

TEST(ThreadPool, EveryIndexRunsOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (size_t n : {0u, 1u, 3u, 100u, 1001u}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n << " i " << i;
    }
  }
}

TEST(ThreadPool, ManyJobsInARow) {
  ThreadPool pool(3);
  std::atomic<long> sum{0};
  for (int job = 0; job < 2000; ++job) pool.parallel_for(7, [&](size_t i) { sum += static_cast<long>(i); });
  EXPECT_EQ(sum.load(), 2000L * 21);
}

TEST(ThreadPool, ExceptionReachesCaller) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.parallel_for(50,
                                 [&](size_t i) {
                                   ++ran;
                                   if (i == 17) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 50);  // the other indices still ran
  // The pool is usable afterwards.
  std::atomic<int> after{0};
  pool.parallel_for(10, [&](size_t) { ++after; });
  EXPECT_EQ(after.load(), 10);
}

TEST(ThreadPool, InlineWhenOneThread) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.size(), 1);
  const std::thread::id caller = std::this_thread::get_id();
  std::set<std::thread::id> seen;
  pool.parallel_for(10, [&](size_t) { seen.insert(std::this_thread::get_id()); });
  EXPECT_EQ(seen, std::set<std::thread::id>{caller});
}

TEST(ThreadPool, UsesSeveralThreads) {
  ThreadPool pool(4);
  std::mutex mu;
  std::set<std::thread::id> seen;
  pool.parallel_for(64, [&](size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard lock(mu);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_GT(seen.size(), 1u);
  EXPECT_EQ(pool.size(), 4);
}

// ComputeShare: while another model's urgent step runs, this pool's workers take no index and the
// calling thread does the whole job; once it is over (or without a share), they work again.
TEST(ThreadPool, WorkersGiveWayWhileAnUrgentStepRuns) {
  ThreadPool pool(4);
  std::atomic<int> urgent{1};
  const std::thread::id caller = std::this_thread::get_id();
  auto threads_used = [&pool] {
    std::mutex mu;
    std::set<std::thread::id> seen;
    pool.parallel_for(64, [&](size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard lock(mu);
      seen.insert(std::this_thread::get_id());
    });
    return seen;
  };
  pool.yield_to(&urgent);
  EXPECT_EQ(threads_used(), std::set<std::thread::id>{caller});
  urgent = 0;
  EXPECT_GT(threads_used().size(), 1u);
  urgent = 1;
  pool.yield_to(nullptr);
  EXPECT_GT(threads_used().size(), 1u);
}

// Indices are claimed one by one: a thread held up on one index (as by another process taking its
// core) leaves the rest to the others instead of holding a fixed share. Index 0 holds its thread
// until the others have completed half the indices (at most 10 s): with fixed shares they could not.
TEST(ThreadPool, SlowThreadLeavesItsShareToOthers) {
  ThreadPool pool(2);
  constexpr size_t kN = 200;
  std::vector<std::thread::id> ran_by(kN);
  std::atomic<size_t> completed{0};
  pool.parallel_for(kN, [&](size_t i) {
    if (i == 0) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (completed.load() < kN / 2 && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    ran_by[i] = std::this_thread::get_id();
    ++completed;
  });
  size_t by_slow = 0;
  for (size_t i = 0; i < kN; ++i) by_slow += ran_by[i] == ran_by[0] ? 1 : 0;
  EXPECT_LT(by_slow, kN / 2) << "the thread held up on index 0 ran " << by_slow << " of " << kN << " indices";
}

// Jobs back to back with uneven work: no index of one job may run with the next job's function.
TEST(ThreadPool, BackToBackJobsKeepTheirOwnFunctions) {
  ThreadPool pool(3);
  for (int job = 0; job < 300; ++job) {
    std::vector<int> out(static_cast<size_t>(job % 17 + 1), -1);
    pool.parallel_for(out.size(), [&](size_t i) {
      if (i % 5 == 0) std::this_thread::yield();
      out[i] = job;
    });
    for (int v : out) ASSERT_EQ(v, job);
  }
}

// The participants bound which threads take indices: at 1 the caller runs every job alone, at k
// no more than k threads run a job's indices, and all of them again once raised.
TEST(ThreadPool, ParticipantsBoundTheThreadsThatRunAJob) {
  ThreadPool pool(4);
  const auto threads_of_a_job = [&] {
    std::mutex m;
    std::set<std::thread::id> ids;
    pool.parallel_for(64, [&](size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    });
    return ids;
  };
  pool.set_participants(1);
  EXPECT_EQ(pool.participants(), 1);
  EXPECT_EQ(threads_of_a_job(), std::set<std::thread::id>{std::this_thread::get_id()});
  pool.set_participants(2);
  for (int job = 0; job < 5; ++job) EXPECT_LE(threads_of_a_job().size(), 2u);
  pool.set_participants(9);  // clamped to the pool
  EXPECT_EQ(pool.participants(), 4);
  size_t most = 0;
  for (int job = 0; job < 5; ++job) most = std::max(most, threads_of_a_job().size());
  EXPECT_GT(most, 2u);  // 64 indices of 2 ms: the other workers take some
}

TEST(ThreadPool, WorkerTidsAreTheWorkersOwn) {
  ThreadPool pool(3);
  const std::vector<pid_t> tids = pool.worker_tids();
  ASSERT_EQ(tids.size(), 2u);
  EXPECT_GT(tids[0], 0);
  EXPECT_GT(tids[1], 0);
  EXPECT_NE(tids[0], tids[1]);
  EXPECT_EQ(std::count(tids.begin(), tids.end(), gettid()), 0);  // not the caller's
  EXPECT_TRUE(ThreadPool(1).worker_tids().empty());
}

}  // namespace
}  // namespace vks
