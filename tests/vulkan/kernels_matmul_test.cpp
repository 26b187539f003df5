// The weight-matrix kernel families, matvec_<type> / matmul_<type> (rows), matlanes_<type> (lanes)
// and quantize_q8_f32 + matdot_<type> (dot), against the plain C++ reference (vks::ref::matmul), on
// awkward sizes, plus batch invariance (bit-identical rows whatever the batch/kernel), split weights
// and the fused residual add.
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/cpu/reference_ops.h"
#include "tests/vulkan/kernels_test_util.h"

namespace vks::vk::test {
namespace {

struct Case {
  GgmlType type;
  uint64_t rows;
  uint64_t cols;
  MatmulFamily family = MatmulFamily::kRows;
  uint32_t lanes_tile = 8;  // the lanes family's wide token tile (Ops)
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(matmul_family_name(c.family)) + (c.lanes_tile != 8 ? std::to_string(c.lanes_tile) : "") + "_" +
         std::string(ggml_type_name(c.type)) + "_" + std::to_string(c.rows) + "x" + std::to_string(c.cols);
}

// Batches that fill wide tiles too: 40 tokens are a tile of 32 and one of 8 (or 16, 16 and 8).
bool wide(const Case& c) { return c.family != MatmulFamily::kRows && c.lanes_tile > 8; }
// The dot family multiplies each token's x as q8 blocks: the reference takes x that way too.
bool int8_x(const Case& c) { return c.family == MatmulFamily::kDot && find_device_format(c.type)->blocked(); }

class MatmulKernelTest : public KernelTest, public ::testing::WithParamInterface<Case> {
 protected:
  void SetUp() override {
    KernelTest::SetUp();
    if (IsSkipped()) return;
    const Case c = GetParam();
    if (!can_run(c.family)) GTEST_SKIP() << "no integer dot products on " << device().info().name;
    data_ = ggml_matrix(c.type, c.rows, c.cols, 1234 + static_cast<uint32_t>(c.rows));
    matrix_ = upload_matrix(device(), c.type, c.rows, c.cols, data_.data());
    x_stride_ = static_cast<uint32_t>((c.cols + 3) / 4 * 4);  // views of one token start 16-byte aligned
  }

  TensorRef tensor() const {
    TensorRef t;
    t.name = "w";
    t.type = GetParam().type;
    t.rows = GetParam().rows;
    t.cols = GetParam().cols;
    t.data = data_.data();
    t.nbytes = data_.size();
    return t;
  }

  // x: [n][x_stride] with the padding filled with NaN (must never be read).
  std::vector<float> make_x(uint32_t n, uint32_t seed) const {
    const uint64_t cols = GetParam().cols;
    const std::vector<float> v = random_floats(n * cols, seed);
    std::vector<float> x(n * x_stride_, std::nanf(""));
    for (uint32_t t = 0; t < n; ++t) std::memcpy(&x[t * x_stride_], &v[t * cols], cols * 4);
    return x;
  }

  enum class Path { kAuto, kMatvec, kMatmul };
  std::vector<float> run_matmul(const DeviceMatrix& m, const std::vector<float>& x, uint32_t n, Path path,
                                uint32_t y_stride, const std::vector<float>* y_init = nullptr) const {
    Buffer xb = upload(x);
    std::vector<float> init = y_init ? *y_init : std::vector<float>(n * y_stride, -7.0f);
    Buffer yb = upload(init);
    const Ops& o = ops(GetParam().family, GetParam().lanes_tile);
    run([&](CommandBuffer& cmd) {
      const bool acc = y_init != nullptr;
      if (path == Path::kMatvec) o.matvec_only(cmd, m, xb.view(), x_stride_, yb.view(), y_stride, n, acc);
      if (path == Path::kMatmul) o.matmul_only(cmd, m, xb.view(), x_stride_, yb.view(), y_stride, n, acc);
      if (path == Path::kAuto) o.matmul(cmd, m, xb.view(), x_stride_, yb.view(), y_stride, n, acc);
    });
    return download<float>(yb, n * y_stride);
  }

  std::vector<uint8_t> data_;
  DeviceMatrix matrix_;
  uint32_t x_stride_ = 0;
};

TEST_P(MatmulKernelTest, MatchesReferenceForEveryBatchSize) {
  const Case c = GetParam();
  std::vector<uint32_t> batches{1u, 2u, 3u, 5u, 8u, 9u, 17u};
  if (wide(c)) batches.push_back(40);
  for (uint32_t n : batches) {
    const std::vector<float> x = make_x(n, 99 + n);
    std::vector<float> dense(n * c.cols);
    for (uint32_t t = 0; t < n; ++t) std::memcpy(&dense[t * c.cols], &x[t * x_stride_], c.cols * 4);
    if (int8_x(c)) dense = q8_round_trip(dense);  // cols % 32 == 0: blocks never straddle tokens
    std::vector<float> expected(n * c.rows);
    ref::matmul(tensor(), dense.data(), n, expected.data(), nullptr);
    for (Path path : {Path::kMatvec, Path::kMatmul}) {
      const std::vector<float> got = run_matmul(matrix_, x, n, path, static_cast<uint32_t>(c.rows));
      // The dot family's sums are exact integers per group, scaled once: float rounding of the
      // group sums only (2e-6 is the float families' bound; an int8 x off by one step would
      // exceed both).
      EXPECT_LT(normalized_error(got, expected), int8_x(c) ? 1e-5 : 2e-6) << "n_tokens=" << n << " path=" << int(path);
    }
  }
}

TEST_P(MatmulKernelTest, RowsAreBitIdenticalWhateverTheBatch) {
  const Case c = GetParam();
  const uint32_t n = wide(c) ? 41 : 19;
  const uint32_t y_stride = static_cast<uint32_t>(c.rows) + 3;
  const std::vector<float> x = make_x(n, 7);
  const std::vector<float> batch_matmul = run_matmul(matrix_, x, n, Path::kMatmul, y_stride);
  const std::vector<float> batch_auto = run_matmul(matrix_, x, n, Path::kAuto, y_stride);
  for (uint32_t t = 0; t < n; ++t) {
    const std::vector<float> one(x.begin() + t * x_stride_, x.begin() + (t + 1) * x_stride_);
    const std::vector<float> alone = run_matmul(matrix_, one, 1, Path::kMatvec, y_stride);
    // Token t inside a matvec batch of a different size and place.
    const uint32_t group = 2 + t % 7;
    const uint32_t first = t >= group - 1 ? t - (group - 1) : 0;
    const std::vector<float> sub(x.begin() + first * x_stride_, x.begin() + (first + group) * x_stride_);
    const std::vector<float> in_group = run_matmul(matrix_, sub, group, Path::kMatvec, y_stride);
    for (uint64_t r = 0; r < c.rows; ++r) {
      const float a = alone[r];
      ASSERT_EQ(std::memcmp(&a, &batch_matmul[t * y_stride + r], 4), 0)
          << "token " << t << " row " << r << ": matvec alone " << a << " vs matmul batch " << batch_matmul[t * y_stride + r];
      ASSERT_EQ(std::memcmp(&a, &batch_auto[t * y_stride + r], 4), 0) << "token " << t << " row " << r;
      ASSERT_EQ(std::memcmp(&a, &in_group[(t - first) * y_stride + r], 4), 0)
          << "token " << t << " row " << r << " in a matvec batch of " << group;
    }
  }
}

TEST_P(MatmulKernelTest, SplitWeightsGiveTheSameBits) {
  const Case c = GetParam();
  // Parts of about a third of the matrix each (at least one row).
  const uint64_t part = std::max<uint64_t>(device_matrix_part_bytes(c.type, 1, c.cols),
                                           device_matrix_part_bytes(c.type, c.rows / 3, c.cols));
  const DeviceMatrix split = upload_matrix(device(), c.type, c.rows, c.cols, data_.data(), part);
  ASSERT_GE(split.storage.part_count(), 3u);
  const uint32_t n = 5;
  const std::vector<float> x = make_x(n, 3);
  const std::vector<float> whole = run_matmul(matrix_, x, n, Path::kAuto, static_cast<uint32_t>(c.rows));
  const std::vector<float> parts = run_matmul(split, x, n, Path::kAuto, static_cast<uint32_t>(c.rows));
  ASSERT_EQ(whole.size(), parts.size());
  EXPECT_EQ(std::memcmp(whole.data(), parts.data(), whole.size() * 4), 0);
  const std::vector<float> parts_mm = run_matmul(split, x, n, Path::kMatmul, static_cast<uint32_t>(c.rows));
  EXPECT_EQ(std::memcmp(whole.data(), parts_mm.data(), whole.size() * 4), 0);
}

TEST_P(MatmulKernelTest, AccumulateAddsTheResidual) {
  const Case c = GetParam();
  const uint32_t n = 3;
  const std::vector<float> x = make_x(n, 11);
  const std::vector<float> residual = random_floats(n * c.rows, 12);
  const std::vector<float> plain = run_matmul(matrix_, x, n, Path::kAuto, static_cast<uint32_t>(c.rows));
  const std::vector<float> fused = run_matmul(matrix_, x, n, Path::kAuto, static_cast<uint32_t>(c.rows), &residual);
  for (size_t i = 0; i < plain.size(); ++i) {
    const float expected = residual[i] + plain[i];
    ASSERT_EQ(std::memcmp(&expected, &fused[i], 4), 0) << i;
  }
}

TEST_P(MatmulKernelTest, XAtAnOffsetInItsBufferGivesTheSameBits) {
  // x is read through its buffer's texel view, which starts at the buffer's first byte: the
  // kernel adds the view's offset itself (MatmulParams::x_offset). NaN before x must never be read.
  const Case c = GetParam();
  const uint32_t n = 3;
  const std::vector<float> x = make_x(n, 21);
  const std::vector<float> at_zero = run_matmul(matrix_, x, n, Path::kAuto, static_cast<uint32_t>(c.rows));
  const uint64_t lead = 68;  // floats: 272 bytes, a multiple of 16 and of common storage alignments
  std::vector<float> padded(lead, std::nanf(""));
  padded.insert(padded.end(), x.begin(), x.end());
  Buffer xb = upload(padded);
  Buffer yb = upload(std::vector<float>(n * c.rows, -7.0f));
  run([&](CommandBuffer& cmd) {
    ops(c.family, c.lanes_tile).matmul(cmd, matrix_, xb.view(lead * 4, x.size() * 4), x_stride_, yb.view(), static_cast<uint32_t>(c.rows), n);
  });
  const std::vector<float> shifted = download<float>(yb, n * c.rows);
  ASSERT_EQ(shifted.size(), at_zero.size());
  EXPECT_EQ(std::memcmp(shifted.data(), at_zero.data(), at_zero.size() * 4), 0);
}

INSTANTIATE_TEST_SUITE_P(Types, MatmulKernelTest,
                         ::testing::Values(Case{GgmlType::kF32, 33, 172}, Case{GgmlType::kF32, 172, 61},
                                           Case{GgmlType::kF16, 33, 172}, Case{GgmlType::kF16, 129, 13},
                                           Case{GgmlType::kBF16, 77, 64}, Case{GgmlType::kQ8_0, 172, 64},
                                           Case{GgmlType::kQ8_0, 33, 160}, Case{GgmlType::kQ4_0, 172, 64},
                                           Case{GgmlType::kQ4_0, 257, 96},
                                           // One awkward size per added type: rows not a multiple
                                           // of a workgroup's, a partial side record (legacy
                                           // types) or several super-blocks (K-quants). Every
                                           // kernel gets rows past its first workgroup (the rows
                                           // family's: 64, 128 or 32 rows), so the grid's rows
                                           // per group are checked against what the shader covers.
                                           Case{GgmlType::kQ4_1, 37, 288}, Case{GgmlType::kQ5_0, 37, 288},
                                           Case{GgmlType::kQ5_1, 37, 288}, Case{GgmlType::kQ2_K, 37, 768},
                                           Case{GgmlType::kQ3_K, 37, 768}, Case{GgmlType::kQ4_K, 137, 768},
                                           Case{GgmlType::kQ5_K, 77, 768}, Case{GgmlType::kQ6_K, 77, 768},
                                           Case{GgmlType::kMXFP4, 137, 288}, Case{GgmlType::kIQ4_NL, 137, 288},
                                           Case{GgmlType::kIQ4_XS, 77, 768}),
                         case_name);

// The lanes family on the same cases, plus rows long enough that every lane takes several groups
// (64 lanes: 4096 Q4_0 columns are 128 groups) and a float tail chunk after them.
std::vector<Case> lanes_cases() {
  std::vector<Case> cases{Case{GgmlType::kF32, 33, 172},   Case{GgmlType::kF16, 129, 13},  Case{GgmlType::kBF16, 37, 64},
                          Case{GgmlType::kQ8_0, 33, 160},  Case{GgmlType::kQ4_0, 257, 96}, Case{GgmlType::kQ4_1, 37, 288},
                          Case{GgmlType::kQ5_0, 37, 288},  Case{GgmlType::kQ5_1, 37, 288}, Case{GgmlType::kQ2_K, 37, 768},
                          Case{GgmlType::kQ3_K, 37, 768},  Case{GgmlType::kQ4_K, 37, 768}, Case{GgmlType::kQ5_K, 37, 768},
                          Case{GgmlType::kQ6_K, 37, 768},  Case{GgmlType::kQ4_0, 9, 4096}, Case{GgmlType::kQ4_K, 7, 4608},
                          Case{GgmlType::kQ6_K, 7, 4608},  Case{GgmlType::kF16, 11, 1037}, Case{GgmlType::kQ8_0, 13, 2080},
                          Case{GgmlType::kMXFP4, 37, 288}, Case{GgmlType::kMXFP4, 9, 4096},
                          Case{GgmlType::kIQ4_NL, 37, 288}, Case{GgmlType::kIQ4_XS, 37, 768}};
  for (Case& c : cases) c.family = MatmulFamily::kLanes;
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Lanes, MatmulKernelTest, ::testing::ValuesIn(lanes_cases()), case_name);

// The int8 dot-product family on the lanes family's cases (its kernels have the lanes kernels'
// grid and order): every quantized type (its int8 form in weight_int8.glsl), rows of many groups per
// lane, F16 (which runs the lanes kernels in this family), and a wide tile.
std::vector<Case> dot_cases() {
  std::vector<Case> cases;
  for (Case c : lanes_cases()) {
    if (!find_device_format(c.type)->blocked() && c.type != GgmlType::kF16) continue;
    c.family = MatmulFamily::kDot;
    cases.push_back(c);
  }
  cases.push_back(Case{GgmlType::kQ4_K, 37, 768, MatmulFamily::kDot, 16});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Dot, MatmulKernelTest, ::testing::ValuesIn(dot_cases()), case_name);

// Wide token tiles (GPUs' prefill): the same bits as one token alone (RowsAreBitIdenticalWhateverTheBatch
// compares a 41-token batch with each token alone and in small batches). A float tail, a scale per
// block, super-blocks, several groups per lane; each case compiles its own pipelines on lavapipe.
INSTANTIATE_TEST_SUITE_P(WideLanes, MatmulKernelTest,
                         ::testing::Values(Case{GgmlType::kF16, 11, 1037, MatmulFamily::kLanes, 32},
                                           Case{GgmlType::kQ4_K, 37, 768, MatmulFamily::kLanes, 32},
                                           Case{GgmlType::kQ6_K, 7, 4608, MatmulFamily::kLanes, 16}),
                         case_name);

// A start converts large matrices on a thread pool and reads stacked rows (Q|K|V, gate|up) from
// their own tensors: the device bytes are those of one thread converting one stacked copy.
TEST_F(KernelTest, PooledAndStackedUploadsGiveTheSameBytes) {
  const uint64_t rows = 3000, cols = 1024;  // q4_0: 1.7 MiB a 3000 rows, past the pool's threshold together
  const std::vector<uint8_t> a = ggml_matrix(GgmlType::kQ4_0, rows, cols, 91);
  const std::vector<uint8_t> b = ggml_matrix(GgmlType::kQ4_0, rows, cols, 92);
  std::vector<uint8_t> stacked(a);
  stacked.insert(stacked.end(), b.begin(), b.end());
  const DeviceMatrix one = upload_matrix(device(), GgmlType::kQ4_0, 2 * rows, cols, stacked.data());
  ThreadPool pool(4);
  const StackedSource sources[] = {{a.data(), rows}, {b.data(), rows}};
  for (uint64_t part_bytes : {uint64_t{0}, uint64_t{1} << 20}) {  // one part, and parts of 1 MiB
    const DeviceMatrix serial = upload_matrix(device(), GgmlType::kQ4_0, 2 * rows, cols, stacked.data(), part_bytes);
    const DeviceMatrix pooled = upload_stacked_matrix(device(), GgmlType::kQ4_0, cols, sources, part_bytes, &pool);
    ASSERT_EQ(pooled.storage.parts.size(), serial.storage.parts.size());
    EXPECT_EQ(pooled.d_offset, serial.d_offset);
    for (size_t p = 0; p < serial.storage.parts.size(); ++p) {
      const Buffer& s = serial.storage.parts[p];
      ASSERT_EQ(pooled.storage.parts[p].size(), s.size());
      EXPECT_EQ(download<uint8_t>(pooled.storage.parts[p], s.size()), download<uint8_t>(s, s.size())) << "part " << p;
    }
  }
  EXPECT_EQ(download<uint8_t>(one.storage.parts[0], one.storage.parts[0].size()),
            download<uint8_t>(upload_stacked_matrix(device(), GgmlType::kQ4_0, cols, sources, 0, &pool).storage.parts[0],
                              one.storage.parts[0].size()));
}

TEST_F(KernelTest, MoreRowGroupsThanOneGridDimensionHolds) {
  // 262,200 rows are 65,550 lanes workgroups of 4 rows: past the 65,535 a grid dimension is
  // guaranteed, so Ops spreads them over grid z; the last rows must still be computed and stored.
  const uint64_t rows = 262200, cols = 32;
  const std::vector<uint8_t> data = ggml_matrix(GgmlType::kQ4_0, rows, cols, 77);
  const DeviceMatrix m = upload_matrix(device(), GgmlType::kQ4_0, rows, cols, data.data());
  const std::vector<float> x = random_floats(cols, 78);
  TensorRef t;
  t.name = "w";
  t.type = GgmlType::kQ4_0;
  t.rows = rows;
  t.cols = cols;
  t.data = data.data();
  t.nbytes = data.size();
  std::vector<float> expected(rows);
  ref::matmul(t, x.data(), 1, expected.data(), nullptr);
  for (MatmulFamily family : {MatmulFamily::kLanes, MatmulFamily::kRows}) {
    Buffer xb = upload(x), yb = upload(std::vector<float>(rows, -7.0f));
    run([&](CommandBuffer& cmd) { ops(family).matmul(cmd, m, xb.view(), cols, yb.view(), rows, 1); });
    const std::vector<float> got = download<float>(yb, rows);
    EXPECT_LT(normalized_error(got, expected), 2e-6) << matmul_family_name(family);
    EXPECT_NE(got.back(), -7.0f) << matmul_family_name(family) << ": the last row was never written";
  }
}

// The SwiGLU epilogue (Ops::matmul_swiglu) is the same code for every weight type (it changes which
// rows a workgroup takes and what it stores), so a few types cover it: each case compiles two more
// pipelines on lavapipe. Hidden sizes (rows / 2: 86, 128, 68, 18, 16, 17, 4) are rarely a multiple of
// a workgroup's outputs (rows family: 2 x 8 to 8 x 8 outputs; lanes: 2, so 17 leaves one past the end).
class SwigluEpilogueTest : public MatmulKernelTest {};

TEST_P(SwigluEpilogueTest, GivesTheBitsOfMatmulThenSwiglu) {
  // The matrix as a gate|up stack: rows 0 .. hidden-1 gate, hidden .. 2*hidden-1 up (an odd last
  // row is left out). Token counts take both rows kernels (matvec up to 8, matmul above); hidden
  // is rarely a multiple of a workgroup's outputs, so the clamped rows past the end are covered.
  const Case c = GetParam();
  const uint32_t hidden = static_cast<uint32_t>(c.rows / 2);
  const DeviceMatrix stack = upload_matrix(device(), c.type, 2 * hidden, c.cols, data_.data());
  ASSERT_TRUE(Ops::swiglu_epilogue_fits(stack));
  const Ops& o = ops(c.family, c.lanes_tile);
  std::vector<uint32_t> batches{1u, 2u, 3u, 5u, 8u, 9u, 17u};
  if (wide(c)) batches.push_back(40);
  for (uint32_t n : batches) {
    const std::vector<float> x = make_x(n, 31 + n);
    const uint32_t y_stride = 2 * hidden + 4;
    const std::vector<float> products = run_matmul(stack, x, n, Path::kAuto, y_stride);
    // swiglu_f32 on the products: the up half moved to the start of its own buffer's rows.
    std::vector<float> up(products.size(), 0.0f);
    for (uint32_t t = 0; t < n; ++t) {
      std::memcpy(&up[t * y_stride], &products[t * y_stride + hidden], hidden * 4);
    }
    Buffer gate_b = upload(products), up_b = upload(up), two_step = upload(std::vector<float>(n * y_stride, -7.0f));
    Buffer xb = upload(x), fused = upload(std::vector<float>(n * y_stride, -7.0f));
    run([&](CommandBuffer& cmd) {
      o.swiglu(cmd, gate_b.view(), up_b.view(), y_stride, two_step.view(), y_stride, n, hidden);
      o.matmul_swiglu(cmd, Ops::weight_op_for(n), stack, xb.view(), x_stride_, fused.view(), y_stride, n);
    });
    const std::vector<float> want = download<float>(two_step, n * y_stride);
    const std::vector<float> got = download<float>(fused, n * y_stride);
    for (uint32_t t = 0; t < n; ++t) {
      for (uint32_t h = 0; h < y_stride; ++h) {
        // Outputs past hidden stay untouched (-7) in both.
        const float expected = h < hidden ? want[t * y_stride + h] : -7.0f;
        ASSERT_EQ(std::memcmp(&expected, &got[t * y_stride + h], 4), 0)
            << "n_tokens " << n << " token " << t << " output " << h << ": " << got[t * y_stride + h] << " vs "
            << expected;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, SwigluEpilogueTest,
                         ::testing::Values(Case{GgmlType::kF32, 172, 61}, Case{GgmlType::kQ4_0, 257, 96},
                                           Case{GgmlType::kQ4_K, 137, 768}, Case{GgmlType::kQ6_K, 77, 768},
                                           Case{GgmlType::kF32, 33, 172, MatmulFamily::kLanes},
                                           Case{GgmlType::kF32, 35, 172, MatmulFamily::kLanes},
                                           Case{GgmlType::kQ4_0, 9, 4096, MatmulFamily::kLanes},
                                           Case{GgmlType::kQ4_0, 9, 4096, MatmulFamily::kDot},
                                           Case{GgmlType::kQ6_K, 77, 768, MatmulFamily::kDot}),
                         case_name);

// The lanes family's RMSNorm prologue (Ops::matmul_rmsnorm), alone and with the SwiGLU epilogue:
// within rounding of rmsnorm_f32 then the product (the scale multiplies the sum instead of each x),
// and a token's bits do not depend on its batch. Columns: float tails (172, 1037) and rows of many
// groups per lane (4096). The wide-tile cases cover the SwiGLU epilogue in wide tiles too.
class RmsnormPrologueTest : public MatmulKernelTest {
 protected:
  // y = w (rmsnorm(x) with norm weights `norm`), fused or as rmsnorm_f32 then the product.
  std::vector<float> run_normed(const DeviceMatrix& w, const std::vector<float>& x, const std::vector<float>& norm,
                                uint32_t n, bool fused, bool swiglu, uint32_t y_stride) const {
    const Ops& o = ops(GetParam().family, GetParam().lanes_tile);
    const uint32_t cols = static_cast<uint32_t>(GetParam().cols);
    Buffer xb = upload(x), nb = upload(norm), xn = upload(std::vector<float>(x.size(), 0.0f));
    Buffer yb = upload(std::vector<float>(n * y_stride, -7.0f));
    run([&](CommandBuffer& cmd) {
      if (fused) {
        o.matmul_rmsnorm(cmd, Ops::weight_op_for(n), w, xb.view(), x_stride_, nb.view(), kEps, yb.view(), y_stride, n,
                         swiglu);
        return;
      }
      o.rmsnorm(cmd, xb.view(), x_stride_, nb.view(), xn.view(), x_stride_, n, cols, kEps);
      cmd.barrier(Stage::kCompute, Stage::kCompute);
      if (swiglu) {
        o.matmul_swiglu(cmd, Ops::weight_op_for(n), w, xn.view(), x_stride_, yb.view(), y_stride, n);
      } else {
        o.matmul(cmd, w, xn.view(), x_stride_, yb.view(), y_stride, n);
      }
    });
    return download<float>(yb, n * y_stride);
  }
  static constexpr float kEps = 1e-5f;
};

TEST_P(RmsnormPrologueTest, MatchesRmsnormThenMatmulAndIsBatchInvariant) {
  const Case c = GetParam();
  ASSERT_NE(c.family, MatmulFamily::kRows);
  // The dot family norms x in its quantize pass exactly as rmsnorm_f32 does: the same bits as the
  // two steps. The lanes prologue scales the sums instead: the same values up to rounding.
  const bool same_bits = int8_x(c);
  std::vector<float> norm = random_floats(c.cols, 5);
  norm.resize((c.cols + 3) / 4 * 4, 0.0f);  // whole texels, as upload_vector_f32 pads them
  const uint32_t hidden = static_cast<uint32_t>(c.rows / 2);
  const DeviceMatrix stack = upload_matrix(device(), c.type, 2 * hidden, c.cols, data_.data());
  for (bool swiglu : {false, true}) {
    const DeviceMatrix& w = swiglu ? stack : matrix_;
    const uint32_t outputs = swiglu ? hidden : static_cast<uint32_t>(c.rows);
    const uint32_t y_stride = outputs + 3;
    const uint32_t n = wide(c) ? 40 : 11;  // 40: a 32-token tile, then 8 tokens
    const std::vector<float> x = make_x(n, 41);
    const std::vector<float> fused = run_normed(w, x, norm, n, true, swiglu, y_stride);
    const std::vector<float> two_step = run_normed(w, x, norm, n, false, swiglu, y_stride);
    std::vector<float> got, want;
    for (uint32_t t = 0; t < n; ++t) {
      for (uint32_t r = 0; r < y_stride; ++r) {
        if (r >= outputs) {  // never written
          ASSERT_EQ(fused[t * y_stride + r], -7.0f) << "token " << t << " row " << r;
          continue;
        }
        got.push_back(fused[t * y_stride + r]);
        want.push_back(two_step[t * y_stride + r]);
      }
    }
    EXPECT_LT(normalized_error(got, want), 2e-6) << "swiglu " << swiglu;
    if (same_bits) {
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << "swiglu " << swiglu;
    } else {
      EXPECT_NE(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
          << "swiglu " << swiglu << ": the fused path gave the two-step bits: was the prologue used?";
    }
    for (uint32_t t : {0u, 5u, 10u}) {
      const std::vector<float> one(x.begin() + t * x_stride_, x.begin() + (t + 1) * x_stride_);
      const std::vector<float> alone = run_normed(w, one, norm, 1, true, swiglu, y_stride);
      ASSERT_EQ(std::memcmp(alone.data(), &fused[t * y_stride], outputs * 4), 0)
          << "swiglu " << swiglu << ": token " << t << " alone differs from its batch of " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Lanes, RmsnormPrologueTest,
                         ::testing::Values(Case{GgmlType::kF32, 33, 172, MatmulFamily::kLanes},
                                           Case{GgmlType::kF16, 11, 1037, MatmulFamily::kLanes},
                                           Case{GgmlType::kQ4_0, 9, 4096, MatmulFamily::kLanes},
                                           Case{GgmlType::kQ4_K, 37, 768, MatmulFamily::kLanes},
                                           Case{GgmlType::kQ6_K, 7, 4608, MatmulFamily::kLanes},
                                           Case{GgmlType::kF16, 11, 1037, MatmulFamily::kLanes, 32},
                                           Case{GgmlType::kQ4_K, 37, 768, MatmulFamily::kLanes, 32}),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Dot, RmsnormPrologueTest,
                         ::testing::Values(Case{GgmlType::kQ4_0, 9, 4096, MatmulFamily::kDot},
                                           Case{GgmlType::kQ4_K, 37, 768, MatmulFamily::kDot, 16},
                                           Case{GgmlType::kF16, 11, 1037, MatmulFamily::kDot}),
                         case_name);

}  // namespace
}  // namespace vks::vk::test
