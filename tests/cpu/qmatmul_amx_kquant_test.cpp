// The amx level's Q4_K (engine/cpu/quant/kernels_amx_kquant.cpp), which follows the "K-block sums"
// convention (kernels.h): bit for bit against a plain implementation of that convention, and the
// same bits for a token alone, in any batch (1..40 tokens: the vector path below 13 tokens, the
// 16-token tiles and their tails), in any row split and with any thread count. Skipped on a CPU
// without AMX (CI's machines); the float reference test of qmatmul_test.cpp covers the level too.
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

constexpr size_t kBlockBytes = 144;

// The K-block sums convention, literally: per block in order, S = sum_j sc_j * P_j and
// M = sum_j m_j * (bsum_2j + bsum_2j+1) in exact integers, then
// acc = (acc + float(S) * (d_w * d_x)) - float(M) * (dmin_w * d_x).
std::vector<float> kblock_sums_reference(const Matrix& m, const float* x, size_t n_tokens) {
  const size_t n_blocks = m.cols / 256, row_bytes = ggml_row_size(m.type, m.cols);
  std::vector<ActQ8x256> act(n_blocks);
  std::vector<float> y(n_tokens * m.rows);
  for (size_t t = 0; t < n_tokens; ++t) {
    quantize_activations(m.type, x + t * m.cols, m.cols, reinterpret_cast<uint8_t*>(act.data()), CpuIsa::kScalar);
    for (size_t r = 0; r < m.rows; ++r) {
      float acc = 0.0f;
      for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* blk = m.bytes.data() + r * row_bytes + b * kBlockBytes;
        int32_t s = 0, mins = 0;
        for (int j = 0; j < 8; ++j) {
          int sc = 0, mn = 0;
          util::scale_min_k4(j, blk + 4, sc, mn);
          int32_t p = 0;
          for (int l = 0; l < 32; ++l) {
            const uint8_t byte = blk[16 + 32 * (j / 2) + l];
            p += (j % 2 == 0 ? byte & 0xF : byte >> 4) * act[b].qs[32 * j + l];
          }
          s += sc * p;
          mins += mn * (act[b].bsums[2 * j] + act[b].bsums[2 * j + 1]);
        }
        const float d = util::half_to_float(util::load_u16(blk)), dmin = util::half_to_float(util::load_u16(blk + 2));
        const float sum = static_cast<float>(s) * (d * act[b].d);
        const float min_term = static_cast<float>(mins) * (dmin * act[b].d);
        acc = (acc + sum) - min_term;
      }
      y[t * m.rows + r] = acc;
    }
  }
  return y;
}

// Blocks of random bytes (every scale and min up to 63, every nibble), or every byte 0xFF (scales,
// mins and nibbles at their maxima: S and M at their bounds with activations at +-127), with d and
// dmin finite halves.
enum class Raw { kRandom, kMax };
Matrix raw_q4_k(size_t rows, size_t cols, Raw raw, uint32_t seed) {
  std::mt19937 rng(seed);
  Matrix m{GgmlType::kQ4_K, rows, cols, std::vector<uint8_t>(rows * ggml_row_size(GgmlType::kQ4_K, cols))};
  for (uint8_t& byte : m.bytes) byte = raw == Raw::kMax ? 0xFF : static_cast<uint8_t>(rng());
  const uint16_t halves[] = {0x3C00, 0x2E66, 0x1400, 0x0001, 0x7BFF, 0xB800};  // 1, 0.1, 2^-10, subnormal, max, -0.5
  for (size_t blk = 0; blk < m.bytes.size() / kBlockBytes; ++blk) {
    for (size_t k = 0; k < 2; ++k) {
      const uint16_t h = raw == Raw::kMax ? uint16_t{0x2E66} : halves[rng() % std::size(halves)];
      std::memcpy(m.bytes.data() + blk * kBlockBytes + 2 * k, &h, 2);
    }
  }
  return m;
}

std::string describe(size_t rows, size_t blocks, size_t n_tokens, const char* fill) {
  return "rows " + std::to_string(rows) + " blocks " + std::to_string(blocks) + " tokens " + std::to_string(n_tokens) +
         " (" + fill + ")";
}

::testing::AssertionResult follows_convention(const Matrix& m, const std::vector<float>& x, size_t n_tokens) {
  std::vector<float> y(n_tokens * m.rows, -1.0f);
  qmatmul(m.ref(), x.data(), n_tokens, y.data(), nullptr, CpuIsa::kAmx);
  const std::vector<float> want = kblock_sums_reference(m, x.data(), n_tokens);
  for (size_t i = 0; i < y.size(); ++i) {
    if (std::memcmp(&y[i], &want[i], sizeof(float)) != 0) {
      return ::testing::AssertionFailure() << "token " << i / m.rows << " row " << i % m.rows << ": " << y[i]
                                           << " where the convention gives " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// Bit for bit against the plain convention: row counts around the 16-row tile and the 4-row
// registers (1, 16, 23, 37), block counts odd and even, token counts on both sides of the paths
// and of the 16-token tile; quantized random and constant values, and raw blocks.
TEST(QmatmulAmxKquant, Q4KFollowsTheKBlockSumsConvention) {
  SKIP_WITHOUT_AMX();
  for (size_t rows : {1u, 16u, 23u, 37u}) {
    for (size_t blocks : {1u, 2u, 3u}) {
      const size_t cols = 256 * blocks;
      const auto seed = static_cast<uint32_t>(rows + blocks);
      for (size_t n_tokens : {1u, 2u, 3u, 9u, 12u, 13u, 16u, 17u, 33u}) {
        for (Fill fill : {Fill::kRandom, Fill::kExtreme}) {
          const Matrix m = make_matrix(GgmlType::kQ4_K, rows, cols, fill, seed);
          const std::vector<float> x = make_activations(n_tokens, cols, fill, 7);
          ASSERT_TRUE(follows_convention(m, x, n_tokens))
              << describe(rows, blocks, n_tokens, fill == Fill::kRandom ? "random" : "extreme");
        }
        const Matrix random_bytes = raw_q4_k(rows, cols, Raw::kRandom, seed);
        ASSERT_TRUE(follows_convention(random_bytes, make_activations(n_tokens, cols, Fill::kRandom, 8), n_tokens))
            << describe(rows, blocks, n_tokens, "raw random bytes");
        const Matrix max_bytes = raw_q4_k(rows, cols, Raw::kMax, seed);
        for (float sign : {1.0f, -1.0f}) {
          std::vector<float> x = make_activations(n_tokens, cols, Fill::kExtreme, 9);  // all quantize to 127
          for (float& v : x) v *= sign;
          ASSERT_TRUE(follows_convention(max_bytes, x, n_tokens)) << describe(rows, blocks, n_tokens, "all at bounds");
        }
      }
    }
  }
}

// y[t] of every batch of 1..40 tokens is the bits of token t computed alone.
TEST(QmatmulAmxKquant, EveryBatchGivesEachTokenItsBitsAlone) {
  SKIP_WITHOUT_AMX();
  constexpr size_t kRows = 23, kCols = 256 * 3, kMaxTokens = 40;
  const Matrix m = raw_q4_k(kRows, kCols, Raw::kRandom, 3);
  test::expect_batches_give_each_token_its_bits_alone(m.ref(), make_activations(kMaxTokens, kCols, Fill::kRandom, 4),
                                                      kMaxTokens, "q4_K", CpuIsa::kAmx);
}

// Row slices of a matrix (first_row not a multiple of 4 or 16, slices across qmatmul's 64-row work
// items) in one qmatmul_jobs call, with 1 and 2 threads, give each row the bits of the whole matrix.
TEST(QmatmulAmxKquant, RowSplitsAndThreadsGiveTheSameBits) {
  SKIP_WITHOUT_AMX();
  constexpr size_t kRows = 2 * kQmatmulRowsPerItem + 23, kCols = 256 * 2;
  const Matrix m = make_matrix(GgmlType::kQ4_K, kRows, kCols, Fill::kRandom, 11);
  const TensorRef w = m.ref();
  for (size_t n_tokens : {1u, 9u, 20u, 70u, 130u}) {  // 130: more than one work item of tokens (128)
    const std::vector<float> x = make_activations(n_tokens, kCols, Fill::kRandom, 12);
    std::vector<float> whole(n_tokens * kRows);
    qmatmul(w, x.data(), n_tokens, whole.data(), nullptr, CpuIsa::kAmx);
    const std::vector<float> want = kblock_sums_reference(m, x.data(), n_tokens);
    ASSERT_EQ(0, std::memcmp(whole.data(), want.data(), whole.size() * sizeof(float))) << "tokens " << n_tokens;
    test::expect_row_slices_give_the_whole_bits(w, x.data(), n_tokens, whole, "q4_K", CpuIsa::kAmx);
  }
}

// The tiles qmatmul prepares once per call (each tile's sums, and the last tile's padded copy),
// each work item reading its tokens' part: four row items x token counts with more than
// one 128-token item and every kind of last tile: 13 (a tail tile alone), 29 (a tile and a tail of
// 13), 138 (the second item's 10 tokens by the vector path, no tile prepared for them), 141 and 143
// (the second item a tail of 13 or 15 alone), 150 and 300 (tails of 6 and 12, padded); two jobs
// sharing activations and one not, 1 and 2 threads, and calls of 16 and 45 tokens.
TEST(QmatmulAmxKquant, WorkItemsReadTheTilesPreparedOncePerCall) {
  SKIP_WITHOUT_AMX();
  const Matrix a = make_matrix(GgmlType::kQ4_K, test::kItemsTestRows, 256 * 2, Fill::kRandom, 21);
  const Matrix b = raw_q4_k(test::kItemsTestRows, 256 * 2, Raw::kRandom, 22);
  for (size_t n_tokens : {13u, 29u, 138u, 141u, 143u, 150u, 300u}) {
    for (size_t piece : {16u, 45u}) {
      test::expect_items_read_their_prepared_tiles(a, b, n_tokens, piece, kblock_sums_reference, "q4_K",
                                                   CpuIsa::kAmx);
    }
  }
}

// Q|K|V of a Q4_K_M file: Q6_K's V between two Q4_K matrices, all three reading the same quantized
// activations; the Q4_K jobs share one preparation across the job without tiles.
TEST(QmatmulAmxKquant, JobsShareTheirTilesAcrossAJobWithout) {
  SKIP_WITHOUT_AMX();
  constexpr size_t kRows = 200, kCols = 256 * 2;
  const Matrix q = make_matrix(GgmlType::kQ4_K, kRows, kCols, Fill::kRandom, 31);
  const Matrix v = make_matrix(GgmlType::kQ6_K, kRows, kCols, Fill::kRandom, 32);
  const Matrix k = make_matrix(GgmlType::kQ4_K, kRows, kCols, Fill::kRandom, 33);
  const TensorRef wq = q.ref(), wv = v.ref(), wk = k.ref();
  for (size_t n_tokens : {29u, 141u, 150u}) {
    const std::vector<float> x = make_activations(n_tokens, kCols, Fill::kRandom, 34);
    std::vector<float> y[3], v_alone(n_tokens * kRows);
    for (std::vector<float>& out : y) out.assign(n_tokens * kRows, -1.0f);
    const MatmulJob jobs[] = {{&wq, 0, kRows, x.data(), n_tokens, y[0].data()},
                              {&wv, 0, kRows, x.data(), n_tokens, y[1].data()},
                              {&wk, 0, kRows, x.data(), n_tokens, y[2].data()}};
    QmatmulScratch scratch;
    qmatmul_jobs(jobs, std::size(jobs), nullptr, CpuIsa::kAmx, scratch);
    qmatmul(wv, x.data(), n_tokens, v_alone.data(), nullptr, CpuIsa::kAmx);
    const std::vector<float> want_q = kblock_sums_reference(q, x.data(), n_tokens);
    const std::vector<float> want_k = kblock_sums_reference(k, x.data(), n_tokens);
    const size_t bytes = n_tokens * kRows * sizeof(float);
    EXPECT_EQ(0, std::memcmp(y[0].data(), want_q.data(), bytes)) << "q, tokens " << n_tokens;
    EXPECT_EQ(0, std::memcmp(y[1].data(), v_alone.data(), bytes)) << "v, tokens " << n_tokens;
    EXPECT_EQ(0, std::memcmp(y[2].data(), want_k.data(), bytes)) << "k, tokens " << n_tokens;
  }
}

}  // namespace
}  // namespace vks::cpuq
