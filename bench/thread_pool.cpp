// What a ThreadPool job costs beyond its work: parallel_for of `items` equal busy-wait items on N
// threads, after a gap of serial work on the caller (the single-threaded ops between a decode
// step's products), against the ideal (work / threads). A TinyLlama-shape decode step is about 110
// jobs (counted in an instrumented build), some 200 us each with the gaps at 2 threads' 46 tok/s:
// every microsecond here is that many a step.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "engine/common/thread_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

void spin_for(double us) {
  const auto until = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(us * 1000));
  while (Clock::now() < until) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ThreadPool overhead per parallel_for"};
  std::vector<int> threads{2};
  std::vector<double> gaps{0, 5, 20, 100}, works{0, 50, 200};
  int items = 8, jobs = 2000, rounds = 2;
  app.add_option("-t,--threads", threads, "thread counts (the caller included)")->capture_default_str();
  app.add_option("--gaps", gaps, "serial microseconds on the caller before each job")->capture_default_str();
  app.add_option("--work", works, "microseconds of work per thread per job (split into --items items)")
      ->capture_default_str();
  app.add_option("--items", items, "items per job")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--jobs", jobs, "jobs per figure")->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_option("--rounds", rounds, "rounds (each figure is the best round's mean)")->check(CLI::Range(1, 100))->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::printf("%7s %8s %9s %14s %14s\n", "threads", "gap us", "work us", "us per job", "overhead us");
  for (const int t : threads) {
    vks::ThreadPool pool(t);
    for (const double gap : gaps) {
      for (const double work : works) {
        const double item_us = work * t / items;
        double best = 1e30;
        for (int r = 0; r < rounds; ++r) {
          double total = 0;
          for (int j = 0; j < jobs; ++j) {
            spin_for(gap);
            const Clock::time_point start = Clock::now();
            pool.parallel_for(static_cast<size_t>(items), [&](size_t) {
              if (item_us > 0) spin_for(item_us);
            });
            total += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
          }
          best = std::min(best, total / jobs);
        }
        std::printf("%7d %8.1f %9.1f %14.2f %14.2f\n", t, gap, work, best, best - work);
      }
    }
  }
  return 0;
}
