// DecodeThreads (engine/cpu/decode_threads.h): one thread fewer after a window in which the
// workers waited for a CPU, never fewer than one; a probe with one thread more now and then, kept
// on a quiet machine and given up on a loaded one; all threads kept on a quiet machine.
#include "engine/cpu/decode_threads.h"

#include <gtest/gtest.h>

namespace vks {
namespace {

// One decode step of 10 ms whose participating workers each waited `share` of it for a CPU.
void step(DecodeThreads& d, double share) {
  const double wall = 0.010;
  d.record(share * wall * (d.threads() - 1), wall);
}

TEST(DecodeThreads, AQuietMachineKeepsEveryThread) {
  DecodeThreads d(4);
  for (int i = 0; i < 1000; ++i) step(d, 0.01);
  EXPECT_EQ(d.threads(), 4);
}

TEST(DecodeThreads, AWindowOfWaitingWorkersShedsOneThreadAtATime) {
  DecodeThreads d(4);
  for (int i = 0; i < DecodeThreads::kWindow - 1; ++i) step(d, 0.4);
  EXPECT_EQ(d.threads(), 4);  // the window is not over yet
  step(d, 0.4);
  EXPECT_EQ(d.threads(), 3);
  for (int i = 0; i < DecodeThreads::kWindow; ++i) step(d, 0.4);
  EXPECT_EQ(d.threads(), 2);
  for (int i = 0; i < DecodeThreads::kWindow; ++i) step(d, 0.4);
  EXPECT_EQ(d.threads(), 1);
  // At 1 thread it stays, but for a probe of 2 steps (given up, the workers waiting) after 16.
  for (int i = 0; i < 3 * DecodeThreads::kWindow; ++i) step(d, 0.4);
  EXPECT_EQ(d.threads(), 1);
}

TEST(DecodeThreads, WaitingAtTheThresholdDoesNotShed) {
  DecodeThreads d(2);
  for (int i = 0; i < 10 * DecodeThreads::kWindow; ++i) step(d, DecodeThreads::kShedAbove * 0.99);
  EXPECT_EQ(d.threads(), 2);
}

// On a loaded machine (workers at 2 threads waiting 40%): shed, then probes of one thread more
// that are given up; the decode spends most steps at 1 thread.
TEST(DecodeThreads, ProbesOnALoadedMachineAreGivenUp) {
  DecodeThreads d(2);
  int at_one = 0, probes = 0, steps = 0;
  for (; steps < 400; ++steps) {
    const int t = d.threads();
    at_one += t == 1 ? 1 : 0;
    step(d, t == 2 ? 0.4 : 0.0);  // at 1 thread there are no workers to wait
    if (t == 1 && d.threads() == 2) ++probes;
  }
  EXPECT_GT(probes, 10);                   // it keeps looking
  EXPECT_GT(at_one, steps * 8 / 10);       // but decodes at 1 thread
}

// The load goes: the next probe finds the workers running, and the threads stay.
TEST(DecodeThreads, AMachineThatBecomesQuietGetsItsThreadsBack) {
  DecodeThreads d(3);
  for (int i = 0; i < 2 * DecodeThreads::kWindow; ++i) step(d, 0.4);
  ASSERT_EQ(d.threads(), 1);
  int steps = 0;
  while (d.threads() < 3 && steps < 200) {
    step(d, 0.0);
    ++steps;
  }
  EXPECT_EQ(d.threads(), 3);
  EXPECT_LE(steps, 2 * (DecodeThreads::kProbeEvery + DecodeThreads::kWindow + DecodeThreads::kProbeWindow));
  for (int i = 0; i < 200; ++i) step(d, 0.0);
  EXPECT_EQ(d.threads(), 3);
}

TEST(DecodeThreads, OneThreadIsOneThread) {
  DecodeThreads d(1);
  for (int i = 0; i < 100; ++i) step(d, 0.9);
  EXPECT_EQ(d.threads(), 1);
}

}  // namespace
}  // namespace vks
