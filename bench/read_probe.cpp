#include "bench/read_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "bench/huge_page_buffer.h"

namespace vks::bench {

double read_probe_gbs(int threads) {
  using Clock = std::chrono::steady_clock;
  const size_t bytes = size_t{512} << 20;
  const size_t words = bytes / sizeof(uint64_t);
  const HugePageBuffer memory(bytes);
  uint64_t* buf = reinterpret_cast<uint64_t*>(memory.data());
  for (size_t i = 0; i < words; ++i) buf[i] = i;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<uint64_t> sums(static_cast<size_t>(threads));
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t lo = words * static_cast<size_t>(t) / static_cast<size_t>(threads);
        const size_t hi = words * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
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
    best = std::max(best, static_cast<double>(bytes) / s / 1e9);
  }
  return best;
}

}  // namespace vks::bench
