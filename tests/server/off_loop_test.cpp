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

}  // namespace
}  // namespace vks::server
