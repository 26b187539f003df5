// The avx512vnni and amx levels' Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4 and IQ4_NL
// (engine/cpu/quant/kernels_avx512vnni_block_sums.cpp, kernels_amx.cpp; only Q4_0 and Q8_0 have
// tiles of their own), which follow the "block sums" convention (kernels.h) rather than the lower levels' lanes:
// at each of those levels the CPU runs, bit for bit against a plain implementation of that
// convention, and the same bits for a token alone, in any batch (1..40 tokens, the passes' and
// tiles' tails included), in any row split and with any thread count. Skipped on a CPU without
// AVX-512 VNNI (the tiles' tests without AMX); the float reference test of qmatmul_test.cpp covers
// the levels too.
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernel_util.h"
#include "engine/cpu/quant/qmatmul.h"
#include "engine/gguf/ggml_type.h"
#include "tests/cpu/qmatmul_convention_checks.h"
#include "tests/cpu/qmatmul_test_data.h"

namespace vks::cpuq {
namespace {

using test::Fill;
using test::make_activations;
using test::make_matrix;
using test::Matrix;
using test::block_sums_reference;

std::string label(GgmlType t) { return std::string(ggml_type_name(t)); }

constexpr GgmlType kBlockSumsTypes[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                                        GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kMXFP4,
                                        GgmlType::kIQ4_NL};
std::string label(GgmlType t, CpuIsa isa) { return label(t) + " at " + std::string(isa_name(isa)); }

// The levels of this CPU whose kBlockSumsTypes follow block sums (none below AVX-512 VNNI).
std::vector<CpuIsa> block_sums_levels() {
  std::vector<CpuIsa> out;
  for (CpuIsa isa : runnable_isas()) {
    if (isa == CpuIsa::kAvx512Vnni || isa == CpuIsa::kAmx) out.push_back(isa);
  }
  return out;
}
#define SKIP_WITHOUT_BLOCK_SUMS() \
  if (block_sums_levels().empty()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI"

// Bit for bit against the plain convention: row counts around the 16-row group (1, 16, 23, 37),
// block counts odd and even, random and extreme values, and token counts that take every path: the
// streamed few-token path (1, 2), the 16-row one (3..), passes of 8 tokens and their tails (8, 9,
// 10, 17, 18), the amx level's tiles from Q8_0's 10 and Q4_0's 13 tokens, and the tokens past
// whole tiles either way (17, 18: a tile and the streamed path; 25, 28, 29: a tile and the 16-row
// path, or two tiles).
TEST(QmatmulBlockSums, FollowsTheBlockSumsConvention) {
  SKIP_WITHOUT_BLOCK_SUMS();
  for (CpuIsa isa : block_sums_levels()) {
    for (GgmlType type : kBlockSumsTypes) {
      for (size_t rows : {1u, 16u, 23u, 37u}) {
        for (size_t blocks : {1u, 5u, 64u}) {
          for (Fill fill : {Fill::kRandom, Fill::kExtreme}) {
            const Matrix m = make_matrix(type, rows, 32 * blocks, fill, static_cast<uint32_t>(rows + blocks));
            for (size_t n_tokens : {1u, 2u, 3u, 4u, 8u, 9u, 10u, 12u, 13u, 15u, 16u, 17u, 18u, 25u, 28u, 29u, 33u}) {
              const std::vector<float> x = make_activations(n_tokens, m.cols, fill, 7);
              std::vector<float> y(n_tokens * rows, -1.0f);
              qmatmul(m.ref(), x.data(), n_tokens, y.data(), nullptr, isa);
              const std::vector<float> want = block_sums_reference(m, x.data(), n_tokens);
              ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
                  << label(type, isa) << " rows " << rows << " blocks " << blocks << " tokens " << n_tokens
                  << (fill == Fill::kExtreme ? " (extreme)" : "");
            }
          }
        }
      }
    }
  }
}

// MXFP4's block scales over the E8M0 range's edges (e = 0 and 1 are subnormal halves, 255 is 2^127,
// which overflows to infinity here): bit for bit against the plain convention, every path.
TEST(QmatmulBlockSums, MxfpScalesAtTheEdgesOfTheExponentRange) {
  SKIP_WITHOUT_BLOCK_SUMS();
  constexpr size_t kRows = 37, kBlocks = 8;
  const uint8_t edges[] = {0, 1, 2, 3, 126, 127, 128, 254, 255};
  Matrix m = make_matrix(GgmlType::kMXFP4, kRows, 32 * kBlocks, Fill::kRandom, 19);
  for (size_t r = 0; r < kRows; ++r) {
    // Rows 0..8: one edge in every block (a subnormal scale's products are not lost beside others').
    for (size_t b = 0; b < kBlocks; ++b) {
      m.bytes[(r * kBlocks + b) * 17] = edges[(r < std::size(edges) ? r : r + b) % std::size(edges)];
    }
  }
  for (CpuIsa isa : block_sums_levels()) {
    for (size_t n_tokens : {1u, 2u, 3u, 9u}) {
      const std::vector<float> x = make_activations(n_tokens, m.cols, Fill::kRandom, 20);
      std::vector<float> y(n_tokens * kRows, -1.0f);
      qmatmul(m.ref(), x.data(), n_tokens, y.data(), nullptr, isa);
      const std::vector<float> want = block_sums_reference(m, x.data(), n_tokens);
      ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
          << label(GgmlType::kMXFP4, isa) << " tokens " << n_tokens;
    }
  }
}

// y[t] of every batch of 1..40 tokens is the bits of token t computed alone (every switch between
// the paths, and the tokens past whole tiles, included).
TEST(QmatmulBlockSums, EveryBatchGivesEachTokenItsBitsAlone) {
  SKIP_WITHOUT_BLOCK_SUMS();
  constexpr size_t kRows = 23, kCols = 32 * 7, kMaxTokens = 40;
  for (CpuIsa isa : block_sums_levels()) {
    for (GgmlType type : kBlockSumsTypes) {
      const Matrix m = make_matrix(type, kRows, kCols, Fill::kRandom, 3);
      test::expect_batches_give_each_token_its_bits_alone(
          m.ref(), make_activations(kMaxTokens, kCols, Fill::kRandom, 4), kMaxTokens, label(type, isa), isa);
    }
  }
}

// Row slices of a matrix (first_row not a multiple of 16, slices across qmatmul's 64-row work
// items) in one qmatmul_jobs call, with 1 and 2 threads, give each row the bits of the whole matrix.
TEST(QmatmulBlockSums, RowSplitsAndThreadsGiveTheSameBits) {
  SKIP_WITHOUT_BLOCK_SUMS();
  constexpr size_t kRows = 2 * kQmatmulRowsPerItem + 23, kCols = 32 * 9;
  for (CpuIsa isa : block_sums_levels()) {
    for (GgmlType type : kBlockSumsTypes) {
      const Matrix m = make_matrix(type, kRows, kCols, Fill::kRandom, 11);
      const TensorRef w = m.ref();
      for (size_t n_tokens : {1u, 3u, 20u, 70u, 130u}) {  // 130: more than one work item of tokens (128)
        const std::vector<float> x = make_activations(n_tokens, kCols, Fill::kRandom, 12);
        std::vector<float> whole(n_tokens * kRows);
        qmatmul(w, x.data(), n_tokens, whole.data(), nullptr, isa);
        const std::vector<float> want = block_sums_reference(m, x.data(), n_tokens);
        ASSERT_EQ(0, std::memcmp(whole.data(), want.data(), whole.size() * sizeof(float))) << label(type, isa);
        test::expect_row_slices_give_the_whole_bits(w, x.data(), n_tokens, whole, label(type, isa), isa);
      }
    }
  }
}

// The tiles qmatmul prepares once per call (kernels.h's PreparedKernel), each work item reading its
// tokens' part: four row items x token counts with more than one 128-token item and
// every kind of last tile: 13 (a tail tile alone), 29 (a tile and a tiled tail of 13), 138 (Q8_0
// tiles the second item's 10 tokens, Q4_0 does not), 141 and 143 (the second item a tiled tail of
// 13 or 15 alone), 150 and 300 (tails of 6 and 12 by the few-token path, Q8_0 tiling the 12);
// two jobs sharing activations and one not, 1 and 2 threads, and calls of 16 and 45 tokens.
TEST(QmatmulBlockSums, AmxWorkItemsReadTheTilesPreparedOncePerCall) {
  SKIP_WITHOUT_AMX();
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ8_0}) {
    const Matrix a = make_matrix(type, test::kItemsTestRows, 32 * 5, Fill::kRandom, 21);
    const Matrix b = make_matrix(type, test::kItemsTestRows, 32 * 5, Fill::kRandom, 22);
    for (size_t n_tokens : {13u, 29u, 138u, 141u, 143u, 150u, 300u}) {
      for (size_t piece : {16u, 45u}) {
        test::expect_items_read_their_prepared_tiles(a, b, n_tokens, piece, block_sums_reference, label(type),
                                                     CpuIsa::kAmx);
      }
    }
  }
}

// Q4_0 and Q8_0 tiles have one layout, so jobs of either type reading the same activations share
// one preparation where it holds every tile the job reads: Q8_0 tiles a last tile from 10 tokens,
// Q4_0 from 13, so with a tail of 10..12 (27 and 138 tokens) the first Q8_0 job prepares its own
// tiles after the first Q4_0 job's, and the jobs after it share the Q8_0 job's.
TEST(QmatmulBlockSums, AmxJobsOfBothTypesShareTheirTilesWhereTheyCan) {
  SKIP_WITHOUT_AMX();
  constexpr size_t kRows = 200, kCols = 32 * 5;
  const Matrix m[] = {make_matrix(GgmlType::kQ4_0, kRows, kCols, Fill::kRandom, 41),
                      make_matrix(GgmlType::kQ8_0, kRows, kCols, Fill::kRandom, 42),
                      make_matrix(GgmlType::kQ4_0, kRows, kCols, Fill::kRandom, 43),
                      make_matrix(GgmlType::kQ8_0, kRows, kCols, Fill::kRandom, 44)};
  for (size_t n_tokens : {27u, 138u, 141u}) {
    const std::vector<float> x = make_activations(n_tokens, kCols, Fill::kRandom, 45);
    std::vector<float> y[std::size(m)];
    std::vector<TensorRef> w;
    std::vector<MatmulJob> jobs;
    for (size_t j = 0; j < std::size(m); ++j) {
      y[j].assign(n_tokens * kRows, -1.0f);
      w.push_back(m[j].ref());
    }
    for (size_t j = 0; j < std::size(m); ++j) jobs.push_back({&w[j], 0, kRows, x.data(), n_tokens, y[j].data()});
    ThreadPool pool2(2);
    QmatmulScratch scratch;
    qmatmul_jobs(jobs.data(), jobs.size(), &pool2, CpuIsa::kAmx, scratch);
    for (size_t j = 0; j < std::size(m); ++j) {
      const std::vector<float> want = block_sums_reference(m[j], x.data(), n_tokens);
      EXPECT_EQ(0, std::memcmp(y[j].data(), want.data(), want.size() * sizeof(float)))
          << "job " << j << " (" << label(m[j].type) << ") tokens " << n_tokens;
    }
  }
}

// The level is the highest where the CPU and OS allow it, and VKSTREAM_CPU_ISA's names include it.
TEST(QmatmulBlockSums, AmxIsTheDetectedLevelWhereAvailable) {
  SKIP_WITHOUT_AMX();
  EXPECT_EQ(runnable_isas().back(), CpuIsa::kAmx);
  EXPECT_TRUE(has_integer_kernel(GgmlType::kQ4_0, CpuIsa::kAmx));
  EXPECT_TRUE(has_integer_kernel(GgmlType::kQ6_K, CpuIsa::kAmx));  // the avx512vnni level's
}

}  // namespace
}  // namespace vks::cpuq
