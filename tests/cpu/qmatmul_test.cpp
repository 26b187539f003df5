// qmatmul (engine/cpu/quant) against the float reference, and its batch invariance: the same bits
// for a token whatever the batch, the thread count and the ISA level.
#include "engine/cpu/quant/qmatmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/reference_ops.h"
#include "engine/gguf/ggml_type.h"
#include "tests/cpu/qmatmul_test_data.h"

namespace vks::cpuq {
namespace {

using test::Fill;
using test::make_activations;
using test::make_matrix;
using test::Matrix;

// The types with integer kernels; the others (F32, F16, BF16) take the float fallback.
bool uses_quantized_activations(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0: case GgmlType::kQ4_1: case GgmlType::kQ5_0: case GgmlType::kQ5_1: case GgmlType::kQ8_0:
    case GgmlType::kMXFP4: case GgmlType::kIQ4_NL: case GgmlType::kIQ4_XS:
    case GgmlType::kQ2_K: case GgmlType::kQ3_K: case GgmlType::kQ4_K: case GgmlType::kQ5_K: case GgmlType::kQ6_K:
      return true;
    default:
      return false;
  }
}

uint32_t activation_block(GgmlType t) {
  const uint32_t bs = ggml_type_traits(t)->block_size;
  return bs == 256 ? 256 : 32;
}

// The activations as qmatmul quantizes them (act_quant.h): per block d = amax / 127 and
// q = nearest integer (ties to even) of x * (127 / amax); back as d * q.
std::vector<double> quantized_activations(GgmlType t, const float* x, size_t cols) {
  std::vector<double> out(x, x + cols);
  if (!uses_quantized_activations(t)) return out;
  const uint32_t ab = activation_block(t);
  for (size_t b = 0; b < cols; b += ab) {
    float amax = 0;
    for (size_t e = b; e < b + ab; ++e) amax = std::max(amax, std::fabs(x[e]));
    const float d = amax / 127.0f;
    const float id = amax != 0 ? 127.0f / amax : 0.0f;
    for (size_t e = b; e < b + ab; ++e) out[e] = static_cast<double>(d) * std::nearbyint(x[e] * id);
  }
  return out;
}

// Every supported type, with a column count of several blocks and rows that fill neither a work
// item (kQmatmulRowsPerItem) nor a token tile (4).
struct Case {
  GgmlType type;
  size_t cols;
};
std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (GgmlType t : supported_ggml_types()) {
    const uint32_t bs = ggml_type_traits(t)->block_size;
    out.push_back({t, bs == 1 ? 101 : bs * 3});  // 101: float types with ref::dot's sequential tail
  }
  return out;
}
constexpr size_t kRows = 37;

std::string label(GgmlType t) { return std::string(ggml_type_name(t)); }

// The float reference: the dequantized row dotted in double. Quantized activations err by at most
// half a quantization step per element (step = block amax / 127), so |y - ref| is bounded by
// sum |w_e| * step_e / 2; the float accumulation adds a relative error far below 1e-4 of sum |w_e x_e|.
TEST(Qmatmul, EveryTypeMatchesTheFloatReference) {
  for (CpuIsa isa : runnable_isas()) {
    for (const Case& c : all_cases()) {
      for (Fill fill : {Fill::kRandom, Fill::kExtreme}) {
        SCOPED_TRACE(std::string(isa_name(isa)));
        const Matrix m = make_matrix(c.type, kRows, c.cols, fill, 11);
        const size_t n_tokens = 5;
        const std::vector<float> x = make_activations(n_tokens, c.cols, fill, 12);
        std::vector<float> y(n_tokens * kRows);
        qmatmul(m.ref(), x.data(), n_tokens, y.data(), nullptr, isa);
        std::vector<float> w(c.cols);
        double err2 = 0, ref2 = 0;
        for (size_t r = 0; r < kRows; ++r) {
          dequantize_row(c.type, m.bytes.data() + r * ggml_row_size(c.type, c.cols), w.data(), c.cols);
          for (size_t t = 0; t < n_tokens; ++t) {
            const float* xt = x.data() + t * c.cols;
            double want = 0, abs_sum = 0, bound = 0;
            const uint32_t ab = activation_block(c.type);
            for (size_t b = 0; b < c.cols; b += ab) {
              double amax = 0;
              for (size_t e = b; e < b + ab && e < c.cols; ++e) amax = std::max(amax, std::fabs(static_cast<double>(xt[e])));
              for (size_t e = b; e < b + ab && e < c.cols; ++e) {
                want += static_cast<double>(w[e]) * xt[e];
                abs_sum += std::fabs(static_cast<double>(w[e]) * xt[e]);
                if (uses_quantized_activations(c.type)) bound += std::fabs(static_cast<double>(w[e])) * amax / 127.0 / 2.0;
              }
            }
            bound = bound * 1.001 + 1e-4 * abs_sum + 1e-6;
            const double got = y[t * kRows + r];
            ASSERT_LE(std::fabs(got - want), bound) << label(c.type) << " row " << r << " token " << t;
            // Tighter: against the activations quantized as act_quant.h specifies, only float rounding
            // remains (relative to the weights' magnitudes, as K-quant mins cancel in the weights).
            const std::vector<double> xq = quantized_activations(c.type, xt, c.cols);
            double want_q = 0, scale = 0, w_max = 0;
            for (size_t e = 0; e < c.cols; ++e) w_max = std::max(w_max, std::fabs(static_cast<double>(w[e])));
            for (size_t e = 0; e < c.cols; ++e) {
              want_q += static_cast<double>(w[e]) * xq[e];
              scale += (std::fabs(static_cast<double>(w[e])) + w_max) * std::fabs(xq[e]);
            }
            ASSERT_LE(std::fabs(got - want_q), 1e-5 * scale + 1e-7) << label(c.type) << " row " << r << " token " << t;
            err2 += (got - want) * (got - want);
            ref2 += want * want;
          }
        }
        // And overall the error is what 8-bit activations give, a few tenths of a percent.
        EXPECT_LT(std::sqrt(err2 / ref2), 0.02) << label(c.type);
      }
    }
  }
}

// Float weights take the dequantize-and-dot path in ref::dot's order: ref::matmul's exact bits.
TEST(Qmatmul, FloatTypesEqualRefMatmul) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    for (size_t cols : {7u, 101u, 300u}) {
      const Matrix m = make_matrix(t, kRows, cols, Fill::kRandom, 3);
      const std::vector<float> x = make_activations(6, cols, Fill::kRandom, 4);
      std::vector<float> got(6 * kRows), want(6 * kRows);
      qmatmul(m.ref(), x.data(), 6, got.data(), nullptr);
      ref::matmul(m.ref(), x.data(), 6, want.data(), nullptr);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << label(t) << " cols " << cols;
    }
  }
}

// y[t] for a token is the same bits alone, in any batch, at any position in the batch and with any
// thread count.
TEST(Qmatmul, BitIdenticalAcrossBatchesAndThreads) {
  ThreadPool pool2(2);
  ThreadPool pool3(3);
  constexpr size_t kTokens = 70;  // more than one token chunk (64) of qmatmul's work items
  constexpr size_t kItemRows = 2 * kQmatmulRowsPerItem + 5;  // several row items, the last one partial
  for (const Case& c : all_cases()) {
    const Matrix m = make_matrix(c.type, kItemRows, c.cols, Fill::kRandom, 5);
    const std::vector<float> x = make_activations(kTokens, c.cols, Fill::kRandom, 6);
    std::vector<float> all(kTokens * kItemRows);
    qmatmul(m.ref(), x.data(), kTokens, all.data(), nullptr);
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
      for (size_t n : {1u, 2u, 3u, 7u, 16u, 33u, 70u}) {
        for (size_t first : {size_t{0}, kTokens - n}) {
          std::vector<float> part(n * kItemRows);
          qmatmul(m.ref(), x.data() + first * c.cols, n, part.data(), pool);
          ASSERT_EQ(0, std::memcmp(part.data(), all.data() + first * kItemRows, part.size() * sizeof(float)))
              << label(c.type) << " n_tokens " << n << " first " << first << " threads "
              << (pool ? pool->size() : 1);
        }
      }
    }
  }
}

// One token's products are cut into guided work items (long first, then shorter, sized by the
// thread count and the one-token rows the whole call has left): two one-token jobs in one call,
// with 1, 2 and 3 threads, give every row the bits of that row's 16-row slice computed alone, and
// write nothing past their outputs.
TEST(Qmatmul, GuidedOneTokenItemsGiveEveryRowItsBits) {
  ThreadPool pool2(2);
  ThreadPool pool3(3);
  constexpr size_t kBigRows = 8 * kQmatmulRowsPerItem + 5, kSmallRows = 3 * kQmatmulRowsPerItem - 16;
  for (const Case& c : all_cases()) {
    const Matrix big = make_matrix(c.type, kBigRows, c.cols, Fill::kRandom, 51);
    const Matrix small = make_matrix(c.type, kSmallRows, c.cols, Fill::kRandom, 52);
    const std::vector<float> x = make_activations(2, c.cols, Fill::kRandom, 53);
    const TensorRef big_ref = big.ref(), small_ref = small.ref();
    std::vector<MatmulJob> jobs = {{&big_ref, 0, kBigRows, x.data(), 1, nullptr},
                                   {&small_ref, 0, kSmallRows, x.data() + c.cols, 1, nullptr}};
    std::vector<std::vector<float>> want(jobs.size());
    for (size_t j = 0; j < jobs.size(); ++j) {
      const TensorRef& w = *jobs[j].w;
      want[j].resize(w.rows);
      for (size_t r0 = 0; r0 < w.rows; r0 += 16) {
        const size_t n = std::min<size_t>(16, w.rows - r0);
        qmatmul(w.rows_slice(r0, n), jobs[j].x, 1, &want[j][r0], nullptr);
      }
    }
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
      std::vector<std::vector<float>> got(jobs.size());
      for (size_t j = 0; j < jobs.size(); ++j) {
        got[j].assign(want[j].size() + 1, -9.0f);
        jobs[j].y = got[j].data();
      }
      qmatmul_jobs(jobs.data(), jobs.size(), pool);
      for (size_t j = 0; j < jobs.size(); ++j) {
        ASSERT_EQ(0, std::memcmp(got[j].data(), want[j].data(), want[j].size() * sizeof(float)))
            << label(c.type) << " job " << j << " threads " << (pool ? pool->size() : 1);
        ASSERT_EQ(got[j].back(), -9.0f) << label(c.type) << " job " << j;
      }
    }
  }
}

// The avx512vnni and amx levels' 32-element types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, IQ4_NL), and the amx
// level's Q4_K, follow conventions of their own ("block sums" and "K-block sums", kernels.h), with other bits: qmatmul_block_sums_test.cpp
// and qmatmul_amx_kquant_test.cpp test them.
bool follows_lane_convention(CpuIsa isa, GgmlType t) {
  const bool block_sums = (isa == CpuIsa::kAvx512Vnni || isa == CpuIsa::kAmx) &&
                          (t == GgmlType::kQ4_0 || t == GgmlType::kQ4_1 || t == GgmlType::kQ5_0 ||
                           t == GgmlType::kQ5_1 || t == GgmlType::kQ8_0 || t == GgmlType::kMXFP4 ||
                           t == GgmlType::kIQ4_NL);
  return !block_sums && !(isa == CpuIsa::kAmx && t == GgmlType::kQ4_K);
}

// Every level this CPU runs gives the scalar level's bits for m times x (n_tokens tokens), where it
// follows the lane convention.
::testing::AssertionResult every_level_gives_the_scalar_bits(const Matrix& m, const std::vector<float>& x,
                                                             size_t n_tokens) {
  std::vector<float> scalar(n_tokens * m.rows);
  qmatmul(m.ref(), x.data(), n_tokens, scalar.data(), nullptr, CpuIsa::kScalar);
  for (CpuIsa isa : runnable_isas()) {
    if (!follows_lane_convention(isa, m.type)) continue;
    std::vector<float> y(n_tokens * m.rows, -1.0f);
    qmatmul(m.ref(), x.data(), n_tokens, y.data(), nullptr, isa);
    if (std::memcmp(y.data(), scalar.data(), y.size() * sizeof(float)) != 0) {
      return ::testing::AssertionFailure() << "differs at " << isa_name(isa);
    }
  }
  return ::testing::AssertionSuccess();
}

// Every ISA level this CPU executes gives the scalar level's bits (VKSTREAM_CPU_ISA forces the
// level for the whole process; here each level is asked for directly).
TEST(Qmatmul, EveryIsaLevelGivesTheSameBits) {
  ASSERT_EQ(runnable_isas().front(), CpuIsa::kScalar);
  for (const Case& c : all_cases()) {
    for (Fill fill : {Fill::kRandom, Fill::kExtreme}) {
      const Matrix m = make_matrix(c.type, kRows, c.cols, fill, 8);
      const size_t n_tokens = 7;  // a tile of 4 and one of 3
      const std::vector<float> x = make_activations(n_tokens, c.cols, fill, 9);
      ASSERT_TRUE(every_level_gives_the_scalar_bits(m, x, n_tokens)) << label(c.type);
    }
  }
}

// The tails of the SIMD tiles: row counts that fill no row group (the 512-bit level takes 4 rows
// at once, the 256-bit 2) and token counts on both sides of the token tiles (4, 8 and 16), each at
// every level against the scalar bits.
TEST(Qmatmul, EveryIsaLevelGivesTheSameBitsOnTileTails) {
  for (const Case& c : all_cases()) {
    if (!uses_quantized_activations(c.type)) continue;
    for (size_t rows = 1; rows <= 9; ++rows) {
      const Matrix m = make_matrix(c.type, rows, c.cols, Fill::kRandom, static_cast<uint32_t>(30 + rows));
      constexpr size_t kMaxTokens = 17;
      const std::vector<float> x = make_activations(kMaxTokens, c.cols, Fill::kRandom, 31);
      for (size_t n_tokens = 1; n_tokens <= kMaxTokens; ++n_tokens) {
        ASSERT_TRUE(every_level_gives_the_scalar_bits(m, x, n_tokens))
            << label(c.type) << " rows " << rows << " tokens " << n_tokens;
      }
    }
  }
}

// Odd block counts per row (the row-group kernels step block by block, prefetching the next group
// of rows) with row counts that leave 1..3 rows after whole groups of 4 (13: two groups with a next
// group to prefetch, then one without) and token counts around the token tiles (pairs, 8, 16), at
// every level against the scalar bits, on random and extreme values.
TEST(Qmatmul, EveryIsaLevelGivesTheSameBitsOnOddBlockCounts) {
  for (const Case& c : all_cases()) {
    if (!uses_quantized_activations(c.type)) continue;
    const size_t bs = ggml_type_traits(c.type)->block_size;
    for (size_t blocks : {1u, 5u, 7u}) {
      for (size_t rows : {1u, 6u, 13u}) {
        for (Fill fill : {Fill::kRandom, Fill::kExtreme}) {
          const Matrix m = make_matrix(c.type, rows, bs * blocks, fill, static_cast<uint32_t>(50 + rows + blocks));
          for (size_t n_tokens : {1u, 3u, 8u, 11u, 16u, 19u}) {
            const std::vector<float> x = make_activations(n_tokens, bs * blocks, fill, 51);
            ASSERT_TRUE(every_level_gives_the_scalar_bits(m, x, n_tokens))
                << label(c.type) << " blocks " << blocks << " rows " << rows << " tokens " << n_tokens
                << (fill == Fill::kExtreme ? " (extreme)" : "");
          }
        }
      }
    }
  }
}

// The activation quantizers of every level write the scalar level's bytes, on values that take
// every branch of the scalar code: NaN and infinities (alone, beside finite values, making amax
// infinite), exact ties of the rounding, values just under and at the clamp, subnormals, -0, an
// all-zero block and ordinary values.
TEST(Qmatmul, EveryIsaLevelQuantizesActivationsToTheSameBytes) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(77);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr size_t kCols = 256 * 6;
  std::vector<float> x(kCols);
  for (size_t i = 0; i < kCols; ++i) {
    const size_t block = i / 32, e = i % 32;
    float v = normal(rng);
    switch (block % 12) {
      case 0: break;                                          // ordinary
      case 1: v = e == 5 ? nan : v; break;                    // a NaN among finite values
      case 2: v = e == 9 ? inf : v; break;                    // amax infinite
      case 3: v = e == 0 ? -inf : (e == 1 ? nan : v); break;  // both
      case 4: v = 0.0f; break;                                // all zero: d = 0
      case 5: v = e == 31 ? 127.0f : static_cast<float>(e) + 0.5f; break;  // ties: amax 127, id 1
      case 6: v = e == 0 ? -254.0f : static_cast<float>(e) - 0.5f; break;  // ties at id 0.5
      case 7: v = std::ldexp(static_cast<float>(e) - 16.0f, -140); break;  // subnormals
      case 8: v = e % 2 ? -0.0f : 1e-30f * static_cast<float>(e); break;
      case 9: v = e % 3 ? 3.0e38f : -3.4e38f; break;          // near the float range
      case 10: v = 1.0f - std::ldexp(1.0f, -24) * static_cast<float>(e % 3); break;  // just under the clamp
      default: v *= 1000.0f; break;
    }
    x[i] = v;
  }
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ4_K}) {
    std::vector<uint8_t> scalar(kCols / 32 * sizeof(ActQ8x32) + kCols / 256 * sizeof(ActQ8x256));
    const size_t bytes = quantize_activations(t, x.data(), kCols, scalar.data(), CpuIsa::kScalar);
    ASSERT_GT(bytes, 0u);
    for (CpuIsa isa : runnable_isas()) {
      std::vector<uint8_t> out(scalar.size(), 0xAB);
      ASSERT_EQ(bytes, quantize_activations(t, x.data(), kCols, out.data(), isa));
      for (size_t i = 0; i < bytes; ++i) {
        ASSERT_EQ(out[i], scalar[i]) << label(t) << " at " << isa_name(isa) << ", byte " << i;
      }
    }
  }
}

TEST(Qmatmul, IntegerKernelsAtEveryLevelForQuantizedTypes) {
  for (CpuIsa isa : runnable_isas()) {
    for (GgmlType t : supported_ggml_types()) {
      EXPECT_EQ(has_integer_kernel(t, isa), uses_quantized_activations(t)) << label(t) << " " << isa_name(isa);
    }
  }
}

TEST(Qmatmul, IsaNames) {
  for (CpuIsa isa : architecture_isas()) EXPECT_EQ(isa_from_name(isa_name(isa)), isa);
  EXPECT_EQ(isa_name(CpuIsa::kAvx512Vnni), "avx512vnni");
  EXPECT_EQ(isa_name(CpuIsa::kAmx), "amx");
  EXPECT_EQ(isa_name(CpuIsa::kNeonDot), "neondot");
  EXPECT_FALSE(isa_from_name("sse9"));
#if defined(__x86_64__)
  // The other architecture's level is no level here (VKSTREAM_CPU_ISA=neondot changes nothing).
  EXPECT_EQ(architecture_isas().size(), 5u);
  EXPECT_FALSE(isa_from_name("neondot"));
  EXPECT_TRUE(isa_at_most(CpuIsa::kAvx2, CpuIsa::kAmx));
  EXPECT_FALSE(isa_at_most(CpuIsa::kAmx, CpuIsa::kAvx2));
#endif
  // The active level is one the CPU executes, and the runnable levels are this architecture's up to it.
  EXPECT_TRUE(isa_at_most(active_isa(), detected_isa()));
  const std::vector<CpuIsa> runnable = runnable_isas();
  ASSERT_FALSE(runnable.empty());
  EXPECT_EQ(runnable.back(), detected_isa());
  EXPECT_TRUE(std::equal(runnable.begin(), runnable.end(), architecture_isas().begin()));
}

// A caller's own scratch gives the same bits, and a smaller batch reuses it without reallocating.
TEST(Qmatmul, CallerScratchIsReused) {
  QmatmulScratch scratch;
  const Matrix m = make_matrix(GgmlType::kQ4_K, kRows, 512, Fill::kRandom, 21);
  const std::vector<float> x = make_activations(9, 512, Fill::kRandom, 22);
  std::vector<float> want(9 * kRows), got(9 * kRows);
  qmatmul(m.ref(), x.data(), 9, want.data(), nullptr);
  qmatmul(m.ref(), x.data(), 9, got.data(), nullptr, active_isa(), scratch);
  ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
  const uint8_t* buffer = scratch.reserve(1);
  qmatmul(m.ref(), x.data(), 2, got.data(), nullptr, active_isa(), scratch);
  EXPECT_EQ(scratch.reserve(1), buffer);
  ASSERT_EQ(0, std::memcmp(got.data(), want.data(), 2 * kRows * sizeof(float)));
}

// qmatmul_jobs gives every job the bits qmatmul gives it alone: jobs of several types (integer
// kernels of both activation blocks, the float fallback), row slices of a stacked matrix, 1 to 70
// tokens, empty jobs, and neighbours that read the same inputs (which share their quantized
// activations only when their activation blocks agree), at every level, with 1 and 2 threads.
TEST(Qmatmul, JobsGiveEachJobItsOwnBits) {
  constexpr size_t kCols = 256, kExpertRows = 37;
  const Matrix stacked = make_matrix(GgmlType::kQ4_0, 3 * kExpertRows, kCols, Fill::kRandom, 31);
  const Matrix up = make_matrix(GgmlType::kQ4_0, 2 * kQmatmulRowsPerItem + 22, kCols, Fill::kRandom, 32);
  const Matrix k_quant = make_matrix(GgmlType::kQ4_K, 41, kCols, Fill::kRandom, 33);
  const Matrix q8 = make_matrix(GgmlType::kQ8_0, 9, kCols, Fill::kRandom, 34);
  const Matrix f16 = make_matrix(GgmlType::kF16, 13, kCols, Fill::kRandom, 35);
  const Matrix q6 = make_matrix(GgmlType::kQ6_K, 70, kCols, Fill::kRandom, 36);
  const std::vector<float> x = make_activations(70, kCols, Fill::kRandom, 37);
  const TensorRef stacked_ref = stacked.ref(), up_ref = up.ref(), k_ref = k_quant.ref(), q8_ref = q8.ref(),
                  f16_ref = f16.ref(), q6_ref = q6.ref();
  const float* x17 = x.data();               // 17 tokens read by three jobs in a row
  const float* x1 = x.data() + 3 * kCols;    // then 1 token, then 2 from the same place
  std::vector<MatmulJob> jobs = {
      {&stacked_ref, kExpertRows, kExpertRows, x17, 17, nullptr},  // expert 1 of a stack
      {&up_ref, 0, up.rows, x17, 17, nullptr},                      // shares the activations above
      {&k_ref, 0, k_quant.rows, x17, 17, nullptr},                  // same x, other blocks: its own
      {&q8_ref, 0, q8.rows, x17, 0, nullptr},                       // no tokens
      {&q8_ref, 5, 1, x1, 1, nullptr},                              // one row of one token
      {&q8_ref, 2, 7, x1, 2, nullptr},                              // same x, more tokens: its own
      {&stacked_ref, 3 * kExpertRows, 0, x1, 2, nullptr},           // no rows
      {&f16_ref, 0, f16.rows, x1, 2, nullptr},                      // the float fallback
      {&q6_ref, 0, q6.rows, x.data(), 70, nullptr},                 // more than one token chunk
      {&stacked_ref, 0, kExpertRows, x.data() + 20 * kCols, 4, nullptr},
  };
  ThreadPool pool2(2);
  for (CpuIsa isa : runnable_isas()) {
    // Each job alone, as qmatmul computes it.
    std::vector<std::vector<float>> want(jobs.size());
    for (size_t j = 0; j < jobs.size(); ++j) {
      const MatmulJob& job = jobs[j];
      want[j].assign(job.n_tokens * job.rows, -7.0f);
      qmatmul(job.w->rows_slice(job.first_row, job.rows), job.x, job.n_tokens, want[j].data(), nullptr, isa);
    }
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
      std::vector<std::vector<float>> got(jobs.size());
      for (size_t j = 0; j < jobs.size(); ++j) {
        got[j].assign(want[j].size() + 1, -9.0f);  // unwritten outputs differ; one more: nothing is written past y
        jobs[j].y = got[j].data();
      }
      QmatmulScratch scratch;
      qmatmul_jobs(jobs.data(), jobs.size(), pool, isa, scratch);
      for (size_t j = 0; j < jobs.size(); ++j) {
        ASSERT_TRUE(want[j].empty() || 0 == std::memcmp(got[j].data(), want[j].data(), want[j].size() * sizeof(float)))
            << "job " << j << " at " << isa_name(isa) << " threads " << (pool ? pool->size() : 1);
        ASSERT_EQ(got[j].back(), -9.0f) << "job " << j;
      }
    }
  }
}

// A job the backend cannot compute is refused before any job runs.
TEST(Qmatmul, JobsAreCheckedBeforeAnyRuns) {
  const Matrix good = make_matrix(GgmlType::kQ4_0, 5, 64, Fill::kRandom, 41);
  const Matrix bad_matrix = make_matrix(GgmlType::kQ4_0, 5, 64, Fill::kRandom, 42);
  TensorRef good_ref = good.ref(), bad = bad_matrix.ref();
  bad.cols = 48;
  const std::vector<float> x = make_activations(2, 64, Fill::kRandom, 43);
  std::vector<float> y(2 * 5, -7.0f), y_bad(2 * 5, -7.0f);
  const MatmulJob jobs[] = {{&good_ref, 0, 5, x.data(), 2, y.data()}, {&bad, 0, 5, x.data(), 2, y_bad.data()}};
  EXPECT_THROW(qmatmul_jobs(jobs, 2, nullptr), Error);
  for (float v : y) ASSERT_EQ(v, -7.0f);
  const MatmulJob past_the_end[] = {{&good_ref, 3, 3, x.data(), 2, y.data()}};
  EXPECT_THROW(qmatmul_jobs(past_the_end, 1, nullptr), Error);
  for (float v : y) ASSERT_EQ(v, -7.0f);
}

TEST(Qmatmul, RejectsPartialBlocks) {
  const Matrix m = make_matrix(GgmlType::kQ4_0, 2, 64, Fill::kRandom, 1);
  TensorRef t = m.ref();
  t.cols = 48;
  std::vector<float> x(48), y(2);
  EXPECT_THROW(qmatmul(t, x.data(), 1, y.data(), nullptr), Error);
}

}  // namespace
}  // namespace vks::cpuq
