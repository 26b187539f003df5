#pragma once
// The batch-invariance checks of the levels with conventions of their own, and the block sums
// convention, shared by their kernel tests (qmatmul_block_sums_test.cpp,
// qmatmul_amx_kquant_test.cpp, qmatmul_packed_test.cpp): whatever the type, every token of a
// batch and every row of a slice must get the bits it gets alone. Each check runs at the level it
// is given (lowered to the CPU's best, as qmatmul does).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernel_util.h"
#include "engine/cpu/quant/isa.h"
#include "engine/cpu/quant/qmatmul.h"
#include "engine/gguf/ggml_type.h"
#include "engine/gguf/mxfp4_codes.h"
#include "tests/cpu/qmatmul_test_data.h"

#define SKIP_WITHOUT_AMX()                                                                        \
  if (vks::cpuq::detected_isa() != vks::cpuq::CpuIsa::kAmx)                                      \
  GTEST_SKIP() << "this CPU has no AMX-INT8 (or the OS refuses this process the tile state)"

namespace vks::cpuq::test {

// llama.cpp's kvalues_iq4nl: the value of each IQ4_NL / IQ4_XS index.
inline constexpr int kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// The block sums convention, literally: for each block in order, the exact integer sum of its
// products (Q4_0: nibble - 8, Q5_0: the five bits - 16, Q4_1 and Q5_1: the unsigned quant, MXFP4:
// the code's doubled value, IQ4_NL: the index's value, times the activation), then acc = acc + float(S) * (d_w * d_x)
// (MXFP4's d_w: half the E8M0 scale), and for Q4_1 and Q5_1 then acc = acc + m_w * s_x.
inline std::vector<float> block_sums_reference(const Matrix& m, const float* x, size_t n_tokens) {
  const GgmlType type = m.type;
  const bool with_min = type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1;
  const bool five_bits = type == GgmlType::kQ5_0 || type == GgmlType::kQ5_1;
  const size_t n_blocks = m.cols / 32, block_bytes = ggml_row_size(type, 32);
  // Where a block's quants start: after d (MXFP4: its E8M0 byte), m and the fifth bits.
  const size_t quants_at = type == GgmlType::kMXFP4 ? 1 : 2 + (with_min ? 2 : 0) + (five_bits ? 4 : 0);
  const size_t row_bytes = ggml_row_size(type, m.cols);
  std::vector<ActQ8x32> act(n_blocks);
  std::vector<float> y(n_tokens * m.rows);
  for (size_t t = 0; t < n_tokens; ++t) {
    quantize_activations(type, x + t * m.cols, m.cols, reinterpret_cast<uint8_t*>(act.data()), CpuIsa::kScalar);
    for (size_t r = 0; r < m.rows; ++r) {
      float acc = 0.0f;
      for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* blk = m.bytes.data() + r * row_bytes + b * block_bytes;
        const uint8_t* qs = blk + quants_at;
        const uint32_t qh = five_bits ? util::load_u32(qs - 4) : 0;
        int32_t s = 0;
        for (int e = 0; e < 32; ++e) {
          const int nibble = e < 16 ? qs[e] & 0xF : qs[e - 16] >> 4;
          const int quant = nibble | static_cast<int>(((qh >> e) & 1u) << 4);
          int w = 0;
          switch (type) {
            case GgmlType::kMXFP4: w = mxfp4::kDoubledE2M1[nibble]; break;
            case GgmlType::kIQ4_NL: w = kIq4Values[nibble]; break;
            case GgmlType::kQ4_0: w = nibble - 8; break;
            case GgmlType::kQ5_0: w = quant - 16; break;
            case GgmlType::kQ4_1: case GgmlType::kQ5_1: w = quant; break;
            default: w = static_cast<int8_t>(qs[e]); break;  // Q8_0
          }
          s += w * act[b].qs[e];
        }
        const float d_w = type == GgmlType::kMXFP4 ? mxfp4::e8m0_half(blk[0]) : util::half_to_float(util::load_u16(blk));
        const float d = d_w * act[b].d;
        const float term = static_cast<float>(s) * d;
        acc = acc + term;
        if (with_min) {
          const float m_w = util::half_to_float(util::load_u16(blk + 2));
          const float min_term = m_w * act[b].s;
          acc = acc + min_term;
        }
      }
      y[t * m.rows + r] = acc;
    }
  }
  return y;
}

// y[t] of every batch of 1..max_tokens tokens (from the first token and ending at the last) is the
// bits of token t computed alone. x: max_tokens tokens of w.cols values.
inline void expect_batches_give_each_token_its_bits_alone(const TensorRef& w, const std::vector<float>& x,
                                                          size_t max_tokens, const std::string& what, CpuIsa isa) {
  const size_t rows = w.rows, cols = w.cols;
  std::vector<float> alone(max_tokens * rows);
  for (size_t t = 0; t < max_tokens; ++t) {
    qmatmul(w, x.data() + t * cols, 1, alone.data() + t * rows, nullptr, isa);
  }
  for (size_t n = 1; n <= max_tokens; ++n) {
    for (size_t first : {size_t{0}, max_tokens - n}) {
      std::vector<float> y(n * rows, -1.0f);
      qmatmul(w, x.data() + first * cols, n, y.data(), nullptr, isa);
      ASSERT_EQ(0, std::memcmp(y.data(), alone.data() + first * rows, y.size() * sizeof(float)))
          << what << " tokens " << n << " first " << first;
    }
  }
}

// Row slices of w (first rows off the 4- and 16-row groups, slices across qmatmul's 64-row work
// items; w needs 2 * kQmatmulRowsPerItem + 23 rows) in one qmatmul_jobs call, with 1 and 2
// threads, give each row the bits `whole` (the whole matrix's n_tokens x w.rows outputs) has.
inline void expect_row_slices_give_the_whole_bits(const TensorRef& w, const float* x, size_t n_tokens,
                                                  const std::vector<float>& whole, const std::string& what,
                                                  CpuIsa isa) {
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
    qmatmul_jobs(jobs.data(), jobs.size(), pool, isa, scratch);
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

// The tiles a call prepares once for all its work items (kernels.h's PreparedKernel), read by every
// item at its tokens' offset: n_tokens x kItemsTestRows rows (four row items, the last of 8 rows), so more
// than one item of 128 tokens where n_tokens > 128. In one qmatmul_jobs call, with 1 and 2 threads,
// jobs 0 and 1 (matrices a and b, as gate and up: the same x, one quantization and one preparation)
// and job 2 (a again, with other activations) give reference(m, x, n)'s bits (a plain
// implementation of the level's convention); and the same three products in calls of `piece`
// tokens give the one call's bits.
inline constexpr size_t kItemsTestRows = 3 * kQmatmulRowsPerItem + 8;
template <class Reference>
void expect_items_read_their_prepared_tiles(const Matrix& a, const Matrix& b, size_t n_tokens, size_t piece,
                                            const Reference& reference, const std::string& what, CpuIsa isa) {
  constexpr size_t kRows = kItemsTestRows;
  ASSERT_EQ(a.rows, kRows);
  ASSERT_EQ(b.rows, kRows);
  ASSERT_EQ(a.cols, b.cols);
  const size_t cols = a.cols;
  const std::vector<float> x = make_activations(n_tokens, cols, Fill::kRandom, static_cast<uint32_t>(n_tokens));
  const std::vector<float> x2 = make_activations(n_tokens, cols, Fill::kRandom, static_cast<uint32_t>(n_tokens + 1));
  const TensorRef wa = a.ref(), wb = b.ref();
  const std::vector<float> want[] = {reference(a, x.data(), n_tokens), reference(b, x.data(), n_tokens),
                                     reference(a, x2.data(), n_tokens)};
  // The three products of tokens [t0, t0 + n) of x and x2 in one call; y[j] holds all n_tokens.
  const auto call = [&](size_t t0, size_t n, ThreadPool* pool, QmatmulScratch& scratch, std::vector<float>* y) {
    const MatmulJob jobs[] = {{&wa, 0, kRows, x.data() + t0 * cols, n, y[0].data() + t0 * kRows},
                              {&wb, 0, kRows, x.data() + t0 * cols, n, y[1].data() + t0 * kRows},
                              {&wa, 0, kRows, x2.data() + t0 * cols, n, y[2].data() + t0 * kRows}};
    qmatmul_jobs(jobs, std::size(jobs), pool, isa, scratch);
  };
  ThreadPool pool2(2);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
    const std::string where = what + " tokens " + std::to_string(n_tokens) + " threads " +
                              std::to_string(pool != nullptr ? pool->size() : 1);
    QmatmulScratch scratch;
    std::vector<float> whole[3], pieces[3];
    for (size_t j = 0; j < 3; ++j) {
      whole[j].assign(n_tokens * kRows, -1.0f);
      pieces[j].assign(n_tokens * kRows, -2.0f);
    }
    call(0, n_tokens, pool, scratch, whole);
    for (size_t t0 = 0; t0 < n_tokens; t0 += piece) call(t0, std::min(piece, n_tokens - t0), pool, scratch, pieces);
    for (size_t j = 0; j < 3; ++j) {
      for (size_t t = 0; t < n_tokens; ++t) {
        ASSERT_EQ(0, std::memcmp(whole[j].data() + t * kRows, want[j].data() + t * kRows, kRows * sizeof(float)))
            << where << " job " << j << " token " << t;
        ASSERT_EQ(0, std::memcmp(pieces[j].data() + t * kRows, whole[j].data() + t * kRows, kRows * sizeof(float)))
            << where << " job " << j << " token " << t << " in calls of " << piece;
      }
    }
  }
}

}  // namespace vks::cpuq::test
