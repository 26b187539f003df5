#include "bench/read_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace vks::bench {

namespace {
constexpr size_t kProbeBytes = size_t{512} << 20;
}

ReadProbe::ReadProbe(int threads) : threads_(std::max(1, threads)), memory_(kProbeBytes) {
  uint64_t* buf = reinterpret_cast<uint64_t*>(memory_.data());
  for (size_t i = 0; i < kProbeBytes / sizeof(uint64_t); ++i) buf[i] = i;
}

double ReadProbe::gbs(int passes) const {
  using Clock = std::chrono::steady_clock;
  const size_t words = kProbeBytes / sizeof(uint64_t);
  const uint64_t* buf = reinterpret_cast<const uint64_t*>(memory_.data());
  double best = 0;
  for (int pass = 0; pass < passes; ++pass) {
    std::vector<uint64_t> sums(static_cast<size_t>(threads_));
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads_; ++t) {
      pool.emplace_back([&, t] {
        const size_t lo = words * static_cast<size_t>(t) / static_cast<size_t>(threads_);
        const size_t hi = words * static_cast<size_t>(t + 1) / static_cast<size_t>(threads_);
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = lo; i + 4 <= hi; i += 4) {
          s0 += buf[i];
          s1 += buf[i + 1];
          s2 += buf[i + 2];
          s3 += buf[i + 3];
        }
        sums[static_cast<size_t>(t)] = s0 + s1 + s2 + s3;
      });
    }
    for (std::thread& th : pool) th.join();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    uint64_t total = 0;
    for (uint64_t v : sums) total += v;
    if (total == 42) std::printf(" ");  // keeps the sums alive
    best = std::max(best, static_cast<double>(kProbeBytes) / s / 1e9);
  }
  return best;
}

double read_probe_gbs(int threads) { return ReadProbe(threads).gbs(5); }

}  // namespace vks::bench
