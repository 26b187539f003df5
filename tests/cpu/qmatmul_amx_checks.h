#pragma once
// The amx level's batch-invariance checks, shared by its kernel tests (qmatmul_amx_test.cpp,
// qmatmul_amx_kquant_test.cpp): whatever the type, every token of a batch and every row of a slice
// must get the bits it gets alone.
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/isa.h"
#include "engine/cpu/quant/qmatmul.h"

#define SKIP_WITHOUT_AMX()                                                                        \
  if (vks::cpuq::detected_isa() != vks::cpuq::CpuIsa::kAmx)                                      \
  GTEST_SKIP() << "this CPU has no AMX-INT8 (or the OS refuses this process the tile state)"

namespace vks::cpuq::test {

// y[t] of every batch of 1..max_tokens tokens (from the first token and ending at the last) is the
// bits of token t computed alone. x: max_tokens tokens of w.cols values.
inline void expect_batches_give_each_token_its_bits_alone(const TensorRef& w, const std::vector<float>& x,
                                                          size_t max_tokens, const std::string& what) {
  const size_t rows = w.rows, cols = w.cols;
  std::vector<float> alone(max_tokens * rows);
  for (size_t t = 0; t < max_tokens; ++t) {
    qmatmul(w, x.data() + t * cols, 1, alone.data() + t * rows, nullptr, CpuIsa::kAmx);
  }
  for (size_t n = 1; n <= max_tokens; ++n) {
    for (size_t first : {size_t{0}, max_tokens - n}) {
      std::vector<float> y(n * rows, -1.0f);
      qmatmul(w, x.data() + first * cols, n, y.data(), nullptr, CpuIsa::kAmx);
      ASSERT_EQ(0, std::memcmp(y.data(), alone.data() + first * rows, y.size() * sizeof(float)))
          << what << " tokens " << n << " first " << first;
    }
  }
}

// Row slices of w (first rows off the 4- and 16-row groups, slices across qmatmul's 64-row work
// items; w needs 2 * kQmatmulRowsPerItem + 23 rows) in one qmatmul_jobs call, with 1 and 2
// threads, give each row the bits `whole` (the whole matrix's n_tokens x w.rows outputs) has.
inline void expect_row_slices_give_the_whole_bits(const TensorRef& w, const float* x, size_t n_tokens,
                                                  const std::vector<float>& whole, const std::string& what) {
  const size_t rows = w.rows;
  ASSERT_EQ(rows, 2 * kQmatmulRowsPerItem + 23);
  const size_t cuts[][2] = {
      {0, 5}, {5, 18}, {23, kQmatmulRowsPerItem + 1}, {kQmatmulRowsPerItem + 24, rows - kQmatmulRowsPerItem - 24}};
  ThreadPool pool2(2);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
    std::vector<std::vector<float>> got(std::size(cuts));
    std::vector<MatmulJob> jobs;
    for (size_t j = 0; j < std::size(cuts); ++j) {
      got[j].assign(n_tokens * cuts[j][1], -1.0f);
      jobs.push_back({&w, cuts[j][0], cuts[j][1], x, n_tokens, got[j].data()});
    }
    QmatmulScratch scratch;
    qmatmul_jobs(jobs.data(), jobs.size(), pool, CpuIsa::kAmx, scratch);
    for (size_t j = 0; j < std::size(cuts); ++j) {
      for (size_t t = 0; t < n_tokens; ++t) {
        ASSERT_EQ(0, std::memcmp(got[j].data() + t * cuts[j][1], whole.data() + t * rows + cuts[j][0],
                                 cuts[j][1] * sizeof(float)))
            << what << " rows from " << cuts[j][0] << " tokens " << n_tokens << " token " << t << " threads "
            << (pool ? pool->size() : 1);
      }
    }
  }
}

}  // namespace vks::cpuq::test
