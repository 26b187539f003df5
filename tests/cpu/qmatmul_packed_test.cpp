// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, IQ4_NL, Q4_K, Q5_K and Q6_K packed in groups of 16 rows (packed_rows.h,
// WeightLayout::kRows16) and the kernels on them (the avx512vnni level's
// kernels_avx512vnni_block_sums.cpp, kernels_avx512vnni_q4k_q5k_packed.cpp and
// kernels_avx512vnni_q6k_packed.cpp; the amx level's kernels_amx_packed.cpp and
// kernels_amx_kquant.cpp, its Q4_K in place of the avx512vnni level's): packing is lossless and
// lays the bytes out as documented, refuses what it cannot pack, and qmatmul / qmatmul_jobs on a
// packed copy give exactly the bits of the GGUF-layout kernels of the level (and of a plain
// implementation of the 32-element types' block sums) for every path: one token, a few, passes
// of tokens, a partial tile, whole tiles and their tails, several row items, slices of rows, 1 and
// 2 threads. The kernel tests run at every level the CPU has that reads packed rows (from AVX-512
// VNNI); packing and the refusals run everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/packed_rows.h"
#include "engine/cpu/quant/qmatmul.h"
#include "engine/gguf/ggml_type.h"
#include "tests/cpu/qmatmul_convention_checks.h"
#include "tests/cpu/qmatmul_test_data.h"

namespace vks::cpuq {
namespace {

using test::block_sums_reference;
using test::Fill;
using test::make_activations;
using test::make_matrix;
using test::Matrix;

std::string label(GgmlType t) { return std::string(ggml_type_name(t)); }

constexpr GgmlType kPackedTypes[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                                     GgmlType::kQ8_0, GgmlType::kMXFP4, GgmlType::kIQ4_NL, GgmlType::kQ4_K, GgmlType::kQ5_K,
                                     GgmlType::kQ6_K};

// The levels of this CPU that read packed rows (every packed type from the avx512vnni level on). A
// kernel test goes through each, and skips where there are none.
std::vector<CpuIsa> packed_levels() {
  std::vector<CpuIsa> out;
  for (CpuIsa isa : runnable_isas()) {
    if (packs_rows16(GgmlType::kQ4_0, isa)) out.push_back(isa);
  }
  return out;
}
std::string label(GgmlType t, CpuIsa isa) { return label(t) + " at " + std::string(isa_name(isa)); }
// Every packed type at every level of packed_levels().
std::vector<std::pair<CpuIsa, GgmlType>> packed_cases() {
  std::vector<std::pair<CpuIsa, GgmlType>> out;
  for (CpuIsa isa : packed_levels()) {
    for (GgmlType type : kPackedTypes) out.emplace_back(isa, type);
  }
  return out;
}
#define SKIP_WITHOUT_PACKED_KERNELS() \
  if (packed_levels().empty()) GTEST_SKIP() << "this CPU reads no packed rows (it has no AVX-512 VNNI)"

// Elements per block of a type (the type table's).
size_t block_values(GgmlType t) { return ggml_type_traits(t)->block_size; }

// A packed copy of m and the TensorRef that names it.
struct Packed {
  std::vector<uint8_t> bytes;
  TensorRef ref;
  explicit Packed(const Matrix& m) : bytes(m.bytes.size()) {
    pack_rows16(m.ref(), bytes.data());
    ref = m.ref();
    ref.data = bytes.data();
    ref.layout = WeightLayout::kRows16;
  }
};

// Random bytes as a matrix of the type (every scale and quant value, NaN scales included: packing
// moves bytes, whatever they mean).
Matrix random_bytes(GgmlType type, size_t rows, size_t cols, uint32_t seed) {
  Matrix m{type, rows, cols, std::vector<uint8_t>(rows * ggml_row_size(type, cols))};
  std::mt19937 rng(seed);
  for (uint8_t& b : m.bytes) b = static_cast<uint8_t>(rng());
  return m;
}

TEST(PackedRows, PackThenUnpackGivesTheOriginalBytes) {
  for (GgmlType type : kPackedTypes) {
    for (const auto& [rows, blocks] : {std::pair<size_t, size_t>{16, 1}, {32, 3}, {48, 7}, {400, 16}}) {
      const size_t cols = blocks * block_values(type);
      const Matrix m = random_bytes(type, rows, cols, static_cast<uint32_t>(rows + cols));
      const Packed p(m);
      EXPECT_NE(p.bytes, m.bytes) << label(type) << " " << rows << "x" << cols;  // it did move them
      std::vector<uint8_t> back(m.bytes.size(), 0xAA);
      unpack_rows16(p.ref, back.data());
      EXPECT_EQ(back, m.bytes) << label(type) << " " << rows << "x" << cols;
    }
  }
}

// packed_rows.h's layout, byte by byte: group g's block b starts at g's first row + 16 b block
// bytes; Q4_0's, Q5_0's and Q8_0's row r's scale at + 2r, its dword k at + 32 + 64k + 4r (Q5_0's
// fifth bits dword 0); Q4_1's and Q5_1's d and m at + 4r, dword k at + 64 + 64k + 4r; MXFP4's
// row r's E8M0 byte at + r, its dword k at + 16 + 64k + 4r; IQ4_NL's as Q4_0's; Q4_K's
// and Q5_K's row r's dword k (from its d and dmin) at + 64k + 4r; Q6_K's dword k at + 64k + 4r
// and its d after the 52 dwords, at + 3328 + 2r.
TEST(PackedRows, LaysTheBytesOutAsDocumented) {
  for (GgmlType type : kPackedTypes) {
    const size_t rows = 48, cols = block_values(type) * 5, block = ggml_row_size(type, block_values(type));
    const bool k_quant = block_values(type) == 256;  // no scale before the dwords
    const size_t head = k_quant                                                  ? 0
                        : type == GgmlType::kMXFP4                               ? 1
                        : type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1 ? 4  // d and m
                                                                             : 2;
    const size_t dwords = (block - head) / 4, tail = block - head - 4 * dwords;
    const Matrix m = random_bytes(type, rows, cols, 5);
    const Packed p(m);
    const size_t row_bytes = ggml_row_size(type, cols);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t b = 0; b < 5; ++b) {
        const uint8_t* src = m.bytes.data() + r * row_bytes + b * block;
        const uint8_t* dst = p.bytes.data() + (r / 16) * 16 * row_bytes + b * 16 * block;
        ASSERT_EQ(0, std::memcmp(dst + head * (r % 16), src, head)) << label(type) << " row " << r << " block " << b;
        for (size_t k = 0; k < dwords; ++k) {
          ASSERT_EQ(0, std::memcmp(dst + 16 * head + 64 * k + 4 * (r % 16), src + head + 4 * k, 4))
              << label(type) << " row " << r << " block " << b << " dword " << k;
        }
        ASSERT_EQ(0, std::memcmp(dst + 16 * head + 64 * dwords + tail * (r % 16), src + head + 4 * dwords, tail))
            << label(type) << " row " << r << " block " << b << " tail";
      }
    }
  }
}

void expect_invalid_argument(const std::function<void()>& fn, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << what << ": " << e.what();
  }
}

TEST(PackedRows, RefusesWhatItCannotPack) {
  std::vector<uint8_t> out(1 << 16);
  const Matrix rows24 = random_bytes(GgmlType::kQ4_0, 24, 64, 1);
  expect_invalid_argument([&] { pack_rows16(rows24.ref(), out.data()); }, "24 rows");
  for (GgmlType type : {GgmlType::kIQ4_XS, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kF32}) {
    const Matrix m = random_bytes(type, 16, 256, 2);
    expect_invalid_argument([&] { pack_rows16(m.ref(), out.data()); }, label(type));
    EXPECT_FALSE(packs_rows16(type, CpuIsa::kAmx)) << label(type);
  }
  const Matrix m = random_bytes(GgmlType::kQ8_0, 16, 64, 3);
  const Packed p(m);
  expect_invalid_argument([&] { pack_rows16(p.ref, out.data()); }, "already packed");
  expect_invalid_argument([&] { unpack_rows16(m.ref(), out.data()); }, "unpacking GGUF rows");
  TensorRef short_bytes = m.ref();
  short_bytes.nbytes -= 1;
  expect_invalid_argument([&] { pack_rows16(short_bytes, out.data()); }, "bytes short of the shape");
  // The avx512vnni and amx levels read every packed type, no other level of this architecture (on
  // aarch64: none).
  for (GgmlType type : kPackedTypes) {
    for (CpuIsa isa : architecture_isas()) {
      const bool reads_packed = isa == CpuIsa::kAvx512Vnni || isa == CpuIsa::kAmx;
      EXPECT_EQ(packs_rows16(type, isa), reads_packed) << label(type) << " " << isa_name(isa);
    }
  }
}

// A level without the packed kernels refuses a packed matrix with an error, and the levels with
// them refuse slices that are not whole groups of 16 rows.
TEST(PackedRows, QmatmulRefusesWhatItCannotRead) {
  const Matrix m = make_matrix(GgmlType::kQ4_0, 64, 64, Fill::kRandom, 4);
  const Packed p(m);
  const std::vector<float> x = make_activations(2, 64, Fill::kRandom, 5);
  std::vector<float> y(2 * 64);
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx, CpuIsa::kAvx2}) {
    try {
      qmatmul(p.ref, x.data(), 2, y.data(), nullptr, isa);
      ADD_FAILURE() << isa_name(isa) << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    }
  }
  for (CpuIsa isa : packed_levels()) {
    for (const auto& [first, rows] : {std::pair<uint64_t, uint64_t>{8, 16}, {16, 24}, {0, 1}}) {
      const MatmulJob job{&p.ref, first, rows, x.data(), 2, y.data()};
      QmatmulScratch scratch;
      expect_invalid_argument([&] { qmatmul_jobs(&job, 1, nullptr, isa, scratch); },
                              std::string(isa_name(isa)) + " rows from " + std::to_string(first) + " x " +
                                  std::to_string(rows));
    }
  }
}

// The packed copy gives the GGUF layout's bits for every token count of the paths (1..40: the
// vpdpbusd path, partial tiles, a whole tile and the tokens past it; 64, 128 and 130: whole tiles,
// a work item of 128 tokens and a second item of 2), on shapes of one group, several, several row
// items with a last item of one group, and odd block counts, with 1 and 2 threads; and the plain
// block sums' bits.
TEST(QmatmulPacked, GivesTheGgufLayoutsBits) {
  SKIP_WITHOUT_PACKED_KERNELS();
  std::vector<size_t> token_counts;
  for (size_t n = 1; n <= 40; ++n) token_counts.push_back(n);
  for (size_t n : {64u, 128u, 130u}) token_counts.push_back(n);
  ThreadPool pool2(2);
  for (CpuIsa isa : packed_levels()) {
    for (GgmlType type : kPackedTypes) {
      const size_t v = block_values(type);
      for (const auto& [rows, cols] : {std::pair<size_t, size_t>{16, v}, {48, 7 * v}, {144, 4096}, {400, 13 * v}}) {
        for (Fill fill : {Fill::kRandom, Fill::kExtreme}) {
          const Matrix m = make_matrix(type, rows, cols, fill, static_cast<uint32_t>(rows + cols));
          const Packed p(m);
          const std::vector<float> x = make_activations(token_counts.back(), cols, fill, 9);
          const std::string what = label(type, isa) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                                   (fill == Fill::kExtreme ? " (extreme)" : "");
          if (cols <= 416 && block_values(type) == 32) {
            const std::vector<float> want = block_sums_reference(m, x.data(), token_counts.back());
            std::vector<float> y(want.size(), -1.0f);
            qmatmul(p.ref, x.data(), token_counts.back(), y.data(), nullptr, isa);
            ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float))) << what << " plain block sums";
          }
          for (size_t n : token_counts) {
            for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
              std::vector<float> want(n * rows, -1.0f), got(n * rows, -2.0f);
              qmatmul(m.ref(), x.data(), n, want.data(), pool, isa);
              qmatmul(p.ref, x.data(), n, got.data(), pool, isa);
              ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                  << what << " tokens " << n << " threads " << (pool != nullptr ? 2 : 1);
            }
          }
        }
      }
    }
  }
}

// Every token of a batch of 1..40 gets the bits it gets alone.
TEST(QmatmulPacked, EveryBatchGivesEachTokenItsBitsAlone) {
  SKIP_WITHOUT_PACKED_KERNELS();
  constexpr size_t kRows = 48, kMaxTokens = 40;
  for (CpuIsa isa : packed_levels()) {
    for (GgmlType type : kPackedTypes) {
      const size_t cols = 7 * block_values(type);
      const Packed p(make_matrix(type, kRows, cols, Fill::kRandom, 3));
      test::expect_batches_give_each_token_its_bits_alone(p.ref, make_activations(kMaxTokens, cols, Fill::kRandom, 4),
                                                          kMaxTokens, label(type, isa), isa);
    }
  }
}

// Expert-like slices of a packed stack of rows (first rows multiples of 16, across work items) in
// one qmatmul_jobs call: gate and up sharing their activations, another input, a GGUF-layout job
// sharing the packed jobs' activations; 1 and 2 threads; each job the bits of the same slice of
// the GGUF matrix computed alone.
TEST(QmatmulPacked, RowSlicesInOneCallGiveTheGgufLayoutsBits) {
  SKIP_WITHOUT_PACKED_KERNELS();
  constexpr size_t kRows = 400;
  ThreadPool pool2(2);
  for (const auto& [isa, type] : packed_cases()) {
    const size_t cols = 9 * block_values(type);
    const Matrix gate = make_matrix(type, kRows, cols, Fill::kRandom, 31), up = make_matrix(type, kRows, cols, Fill::kRandom, 32);
    const Packed pg(gate), pu(up);
    const TensorRef gate_gguf = gate.ref();
    for (size_t n_tokens : {1u, 3u, 9u, 20u, 130u}) {
      const std::vector<float> x = make_activations(n_tokens, cols, Fill::kRandom, 33);
      const std::vector<float> x2 = make_activations(n_tokens, cols, Fill::kRandom, 34);
      struct Slice {
        const TensorRef* w;
        const TensorRef* gguf;
        uint64_t first, rows;
        const float* x;
      };
      const Slice slices[] = {{&pg.ref, &gate_gguf, 0, 16, x.data()},     {&pu.ref, nullptr, 0, 16, x.data()},
                              {&pg.ref, &gate_gguf, 48, 80, x2.data()},   {&pu.ref, nullptr, 48, 80, x2.data()},
                              {&gate_gguf, nullptr, 48, 80, x2.data()},   {&pg.ref, &gate_gguf, 208, 192, x.data()},
                              {&pu.ref, nullptr, 208, 192, x.data()}};
      const TensorRef up_gguf = up.ref();
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
        std::vector<std::vector<float>> got(std::size(slices));
        std::vector<MatmulJob> jobs;
        for (size_t j = 0; j < std::size(slices); ++j) {
          got[j].assign(n_tokens * slices[j].rows, -1.0f);
          jobs.push_back({slices[j].w, slices[j].first, slices[j].rows, slices[j].x, n_tokens, got[j].data()});
        }
        QmatmulScratch scratch;
        qmatmul_jobs(jobs.data(), jobs.size(), pool, isa, scratch);
        for (size_t j = 0; j < std::size(slices); ++j) {
          const Slice& s = slices[j];
          const TensorRef* gguf = s.w == &pu.ref ? &up_gguf : &gate_gguf;
          std::vector<float> want(n_tokens * s.rows, -2.0f);
          const MatmulJob alone{gguf, s.first, s.rows, s.x, n_tokens, want.data()};
          QmatmulScratch scratch_alone;
          qmatmul_jobs(&alone, 1, nullptr, isa, scratch_alone);
          ASSERT_EQ(0, std::memcmp(got[j].data(), want.data(), want.size() * sizeof(float)))
              << label(type, isa) << " job " << j << " tokens " << n_tokens << " threads " << (pool != nullptr ? 2 : 1);
        }
      }
    }
  }
}

// Packed Q4_0 and Q8_0 jobs reading the same activations share one preparation of their tiles
// where it holds every tile a job reads: Q8_0 tiles a last partial tile from 8 tokens, Q4_0 from
// 12, so with a tail of 8..11 (27 and 138 tokens) the first Q8_0 job prepares its own after the
// first Q4_0 job's; 141 tokens (a tail of 13) is one preparation for all four.
TEST(QmatmulPacked, AmxJobsOfBothTypesShareTheirTilesWhereTheyCan) {
  SKIP_WITHOUT_AMX();
  constexpr size_t kRows = 64, kCols = 32 * 5;
  const Matrix m[] = {make_matrix(GgmlType::kQ4_0, kRows, kCols, Fill::kRandom, 41),
                      make_matrix(GgmlType::kQ8_0, kRows, kCols, Fill::kRandom, 42),
                      make_matrix(GgmlType::kQ4_0, kRows, kCols, Fill::kRandom, 43),
                      make_matrix(GgmlType::kQ8_0, kRows, kCols, Fill::kRandom, 44)};
  const Packed p[] = {Packed(m[0]), Packed(m[1]), Packed(m[2]), Packed(m[3])};
  ThreadPool pool2(2);
  for (size_t n_tokens : {27u, 138u, 141u}) {
    const std::vector<float> x = make_activations(n_tokens, kCols, Fill::kRandom, 45);
    std::vector<float> y[std::size(m)];
    std::vector<MatmulJob> jobs;
    for (size_t j = 0; j < std::size(m); ++j) {
      y[j].assign(n_tokens * kRows, -1.0f);
      jobs.push_back({&p[j].ref, 0, kRows, x.data(), n_tokens, y[j].data()});
    }
    QmatmulScratch scratch;
    qmatmul_jobs(jobs.data(), jobs.size(), &pool2, CpuIsa::kAmx, scratch);
    for (size_t j = 0; j < std::size(m); ++j) {
      const std::vector<float> want = block_sums_reference(m[j], x.data(), n_tokens);
      EXPECT_EQ(0, std::memcmp(y[j].data(), want.data(), want.size() * sizeof(float)))
          << "job " << j << " (" << label(m[j].type) << ") tokens " << n_tokens;
    }
  }
}

// Against the float reference (dequantized weights, double sums): the error of 8-bit activations,
// a few tenths of a percent, so a kernel off by a wrong scale or a wrong nibble cannot pass.
TEST(QmatmulPacked, MatchesTheFloatReference) {
  SKIP_WITHOUT_PACKED_KERNELS();
  constexpr size_t kRows = 80;
  for (const auto& [isa, type] : packed_cases()) {
    const size_t cols = 11 * block_values(type);
    const Matrix m = make_matrix(type, kRows, cols, Fill::kRandom, 51);
    const Packed p(m);
    for (size_t n_tokens : {1u, 5u, 16u, 21u}) {
      const std::vector<float> x = make_activations(n_tokens, cols, Fill::kRandom, 52);
      std::vector<float> y(n_tokens * kRows);
      qmatmul(p.ref, x.data(), n_tokens, y.data(), nullptr, isa);
      std::vector<float> w(cols);
      double err2 = 0, ref2 = 0;
      for (size_t r = 0; r < kRows; ++r) {
        dequantize_row(type, m.bytes.data() + r * ggml_row_size(type, cols), w.data(), cols);
        for (size_t t = 0; t < n_tokens; ++t) {
          double want = 0;
          for (size_t c = 0; c < cols; ++c) want += static_cast<double>(w[c]) * x[t * cols + c];
          const double got = y[t * kRows + r];
          err2 += (got - want) * (got - want);
          ref2 += want * want;
        }
      }
      EXPECT_LT(std::sqrt(err2 / ref2), 0.02) << label(type, isa) << " tokens " << n_tokens;
    }
  }
}

}  // namespace
}  // namespace vks::cpuq
