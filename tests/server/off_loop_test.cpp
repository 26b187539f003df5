// OffLoop on a real libuv loop: work runs on a pool thread, completions on the loop thread, a
// slow client does not hold up another one, and a busy client's later requests keep their order.
#include <gtest/gtest.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/common/error.h"
#include "server/off_loop.h"

namespace vks::server {
namespace {

struct Loop {
  uv_loop_t loop{};
  Loop() { uv_loop_init(&loop); }
  ~Loop() { uv_loop_close(&loop); }
  void run() { uv_run(&loop, UV_RUN_DEFAULT); }
};

TEST(OffLoop, WorkRunsOnAPoolThreadAndCompletesOnTheLoop) {
  Loop l;
  OffLoop off;
  const std::thread::id loop_thread = std::this_thread::get_id();
  std::thread::id work_thread;
  bool done_on_loop = false;
  off.run(&l.loop, "a", [&] { work_thread = std::this_thread::get_id(); },
          [&](std::exception_ptr e) {
            EXPECT_FALSE(e);
            done_on_loop = std::this_thread::get_id() == loop_thread;
          });
  EXPECT_TRUE(off.busy("a"));
  EXPECT_EQ(off.in_flight(), 1u);
  l.run();
  EXPECT_NE(work_thread, loop_thread);
  EXPECT_TRUE(done_on_loop);
  EXPECT_FALSE(off.busy("a"));
  EXPECT_EQ(off.in_flight(), 0u);
}

TEST(OffLoop, AnExceptionInTheWorkReachesTheCompletion) {
  Loop l;
  OffLoop off;
  std::string message;
  off.run(&l.loop, "a", [] { throw Error(ErrorCode::kInvalidArgument, "bad text"); },
          [&](std::exception_ptr e) {
            ASSERT_TRUE(e);
            try {
              std::rethrow_exception(e);
            } catch (const Error& err) {
              message = err.what();
            }
          });
  // A throwing completion is logged, not propagated into libuv.
  off.run(&l.loop, "b", [] {}, [](std::exception_ptr) { throw std::runtime_error("completion bug"); });
  l.run();
  EXPECT_EQ(message, "bad text");
  EXPECT_EQ(off.in_flight(), 0u);
}

TEST(OffLoop, ASlowClientDoesNotDelayAnotherAndKeepsItsOwnOrder) {
  Loop l;
  OffLoop off;
  std::vector<std::string> order;
  std::atomic<bool> release{false};
  off.run(&l.loop, "slow", [&] {
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (!release && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          },
          [&](std::exception_ptr) { order.push_back("slow-1"); });
  ASSERT_TRUE(off.busy("slow"));
  off.defer("slow", [&] { order.push_back("slow-2"); });
  // The third request of the slow client starts new work: the fourth must wait for it.
  off.defer("slow", [&] {
    order.push_back("slow-3-start");
    off.run(&l.loop, "slow", [] {}, [&](std::exception_ptr) { order.push_back("slow-3"); });
  });
  off.defer("slow", [&] { order.push_back("slow-4"); });
  off.run(&l.loop, "fast", [] {}, [&](std::exception_ptr) {
    order.push_back("fast");
    release = true;
  });
  l.run();
  EXPECT_EQ(order, (std::vector<std::string>{"fast", "slow-1", "slow-2", "slow-3-start", "slow-3", "slow-4"}));
  EXPECT_FALSE(off.busy("slow"));
}

TEST(OffLoop, AForgottenClientsDeferredRequestsAreDropped) {
  Loop l;
  OffLoop off;
  int ran = 0;
  int done = 0;
  off.run(&l.loop, "gone", [] {}, [&](std::exception_ptr) { ++done; });
  off.defer("gone", [&] { ++ran; });
  off.forget("gone");
  l.run();
  EXPECT_EQ(done, 1);  // in-flight work still completes
  EXPECT_EQ(ran, 0);
  EXPECT_FALSE(off.busy("gone"));
}

// Issue 37: six slow renders of client-sent templates filled libuv's 4 threads and another
// client's ordinary chat waited 13 s. Client-chosen work holds at most half the pool; the rest of
// it waits in order, and bounded work of anyone else still finds a thread at once.
TEST(OffLoop, ClientChosenWorkLeavesHalfThePoolToEveryoneElse) {
  Loop l;
  OffLoop off;
  ASSERT_GE(off.max_client_chosen(), 1u);
  std::atomic<bool> release{false};
  std::atomic<int> running{0}, most{0}, ended{0};
  bool other_done_first = false;
  constexpr int kSlow = 8;
  for (int i = 0; i < kSlow; ++i) {
    off.run(
        &l.loop, "slow" + std::to_string(i),
        [&] {
          const int now = ++running;
          int seen = most.load();
          while (now > seen && !most.compare_exchange_weak(seen, now)) {
          }
          // Held until the other client's work is done (or 10 s, so a failing test still ends).
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (!release && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          --running;
        },
        [&](std::exception_ptr) { ++ended; }, nullptr, OffLoop::Cost::kClientChosen);
  }
  EXPECT_EQ(off.client_chosen_waiting(), kSlow - off.max_client_chosen());
  off.run(&l.loop, "other", [] {}, [&](std::exception_ptr e) {
    EXPECT_FALSE(e);
    other_done_first = ended == 0;
    release = true;
  });
  l.run();
  EXPECT_TRUE(other_done_first);
  EXPECT_EQ(ended, kSlow);
  EXPECT_LE(most.load(), static_cast<int>(off.max_client_chosen()));
  EXPECT_EQ(off.in_flight(), 0u);
}

// A client that went away: its work in flight reads its cancel flag and stops, and its work still
// waiting for a thread is not run at all (its completion says cancelled).
TEST(OffLoop, ForgetCancelsTheClientsWorkInFlightAndWaiting) {
  Loop l;
  OffLoop off;
  const size_t threads = off.max_client_chosen();
  std::vector<OffLoop::CancelFlag> flags;
  std::atomic<int> stopped_by_flag{0}, ran{0};
  int done = 0, done_cancelled = 0;
  // Every client-chosen thread taken by "gone", and one more of its works waiting.
  for (size_t i = 0; i <= threads; ++i) {
    auto flag = std::make_shared<std::atomic<bool>>(false);
    flags.push_back(flag);
    off.run(
        &l.loop, "gone",
        [&, flag] {
          ++ran;
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (!*flag && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          if (*flag) ++stopped_by_flag;
        },
        [&](std::exception_ptr e) {
          ++done;
          try {
            if (e) std::rethrow_exception(e);
          } catch (const Error& err) {
            if (err.code() == ErrorCode::kCancelled) ++done_cancelled;
          }
        },
        flag, OffLoop::Cost::kClientChosen);
  }
  EXPECT_EQ(off.client_chosen_waiting(), 1u);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ran < static_cast<int>(threads) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the pool threads run without the loop
  }
  off.forget("gone");
  for (const auto& flag : flags) EXPECT_TRUE(*flag);
  l.run();
  EXPECT_EQ(done, static_cast<int>(threads) + 1);  // every completion still runs
  EXPECT_EQ(ran.load(), static_cast<int>(threads));
  EXPECT_EQ(stopped_by_flag.load(), static_cast<int>(threads));
  EXPECT_EQ(done_cancelled, 1);
  EXPECT_EQ(off.in_flight(), 0u);
}

// The daemon closing: work waiting for a thread is not run (the engine it would use is going
// away), and running work with a cancel flag is told to stop.
TEST(OffLoop, StopRunsNothingMoreAndCancelsWhatRuns) {
  Loop l;
  OffLoop off;
  std::atomic<int> ran{0}, stopped_by_flag{0};
  int done = 0;
  for (size_t i = 0; i <= off.max_client_chosen(); ++i) {
    auto flag = std::make_shared<std::atomic<bool>>(false);
    off.run(
        &l.loop, "c" + std::to_string(i),
        [&, flag] {
          ++ran;
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (!*flag && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          if (*flag) ++stopped_by_flag;
        },
        [&](std::exception_ptr) { ++done; }, flag, OffLoop::Cost::kClientChosen);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ran < static_cast<int>(off.max_client_chosen()) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  off.stop();
  bool later_ran = false;
  off.run(&l.loop, "late", [&] { later_ran = true; }, [&](std::exception_ptr e) { EXPECT_TRUE(e); });
  l.run();
  EXPECT_EQ(done, static_cast<int>(off.max_client_chosen()) + 1);
  EXPECT_EQ(ran.load(), static_cast<int>(off.max_client_chosen()));  // the waiting one never ran
  EXPECT_EQ(stopped_by_flag.load(), static_cast<int>(off.max_client_chosen()));
  EXPECT_FALSE(later_ran);
}

// A hold (a model loading on a thread of its own) defers the client's later requests like work in
// flight does; work started while held keeps them deferred after the release.
TEST(OffLoop, HoldDefersLaterRequestsUntilReleaseAndWorkStartedMeanwhile) {
  Loop l;
  OffLoop off;
  std::vector<std::string> order;
  off.hold("a");
  EXPECT_TRUE(off.busy("a"));
  EXPECT_FALSE(off.busy("b"));
  off.defer("a", [&] { order.push_back("second"); });
  // The held request continues: it starts work of its own before the hold is released.
  off.run(&l.loop, "a", [] {}, [&](std::exception_ptr) { order.push_back("first's work"); });
  off.release("a");
  EXPECT_TRUE(order.empty());  // still busy with that work: the deferred request waits
  EXPECT_TRUE(off.busy("a"));
  l.run();
  EXPECT_EQ(order, (std::vector<std::string>{"first's work", "second"}));
  EXPECT_FALSE(off.busy("a"));
  EXPECT_EQ(off.in_flight(), 0u);
}

TEST(OffLoop, ReleaseRunsTheDeferredRequestsInOrder) {
  OffLoop off;
  std::vector<int> order;
  off.hold("a");
  off.defer("a", [&] { order.push_back(1); });
  off.defer("a", [&] { order.push_back(2); });
  off.release("a");
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_FALSE(off.busy("a"));
  EXPECT_EQ(off.in_flight(), 0u);
}

}  // namespace
}  // namespace vks::server
