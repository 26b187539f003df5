// embed, rmsnorm, swiglu, add, argmax, topk and gather_rows against plain C++ references.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "engine/cpu/reference_ops.h"
#include "engine/vulkan/shaders/shader_params.h"
#include "tests/vulkan/kernels_test_util.h"

namespace vks::vk::test {
namespace {

class OpsTest : public KernelTest {
 protected:
  // Runs topk on `rows` rows of `cols` and checks every pick against a stable sort of the row (value
  // descending, index ascending, NaN as -inf).
  void expect_topk_matches_sort(const std::vector<float>& x, uint32_t rows, uint32_t cols, uint32_t k) {
    Buffer xb = upload(x), ib = upload(std::vector<int32_t>(rows * k, -1)), vb = upload(std::vector<float>(rows * k));
    run([&](CommandBuffer& cmd) { ops().topk(cmd, xb.view(), cols, rows, cols, k, ib.view(), vb.view()); });
    const std::vector<int32_t> idx = download<int32_t>(ib, rows * k);
    const std::vector<float> val = download<float>(vb, rows * k);
    for (uint32_t r = 0; r < rows; ++r) {
      std::vector<int32_t> order(cols);
      std::iota(order.begin(), order.end(), 0);
      auto key = [&](int32_t j) {
        const float v = x[size_t{r} * cols + j];
        return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v;
      };
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return key(a) > key(b); });
      for (uint32_t j = 0; j < k; ++j) {
        ASSERT_EQ(idx[r * k + j], order[j]) << "row " << r << " rank " << j;
        ASSERT_EQ(val[r * k + j], key(order[j])) << "row " << r << " rank " << j;
      }
    }
  }
};

TEST_F(OpsTest, EmbedGathersExactRowsOfEveryType) {
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                        GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K,
                        GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kMXFP4,
                        GgmlType::kIQ4_NL, GgmlType::kIQ4_XS}) {
    const uint32_t block = ggml_type_traits(static_cast<uint32_t>(type))->block_size;
    const uint64_t rows = 37, cols = block == 1 ? 61 : block == 32 ? 96 : 512;
    const std::vector<uint8_t> data = ggml_matrix(type, rows, cols, 5);
    const std::vector<float> table = dequantize_matrix(type, data, rows, cols);
    // Split in parts of ~10 rows so tokens land in different parts; one id out of range.
    const DeviceMatrix m =
        upload_matrix(device(), type, rows, cols, data.data(), device_matrix_part_bytes(type, 10, cols));
    ASSERT_EQ(m.storage.part_count(), 4u);
    const std::vector<int32_t> ids = {0, 36, 5, 10, 9, 20, 37, 21, 36};
    const uint32_t stride = static_cast<uint32_t>(cols) + 39;
    Buffer tok = upload(ids);
    Buffer out = upload(std::vector<float>(ids.size() * stride, 42.0f));
    run([&](CommandBuffer& cmd) { ops().embed(cmd, m, tok.view(), uint32_t(ids.size()), out.view(), stride); });
    const std::vector<float> got = download<float>(out, ids.size() * stride);
    for (size_t t = 0; t < ids.size(); ++t) {
      for (uint64_t j = 0; j < stride; ++j) {
        const float expected = (j < cols && ids[t] < int32_t(rows)) ? table[ids[t] * cols + j] : 42.0f;
        ASSERT_EQ(got[t * stride + j], expected) << ggml_type_name(type) << " token " << t << " col " << j;
      }
    }
  }
}

TEST_F(OpsTest, EmbedMxfp4RowsAtTheEdgesOfTheExponentRange) {
  // One row per exponent byte, every code twice: e = 0 and 1 give subnormal scales (2^-128,
  // 2^-127), 253..255 weights that overflow float to infinity; -0 (code 8) must come back as +0.
  const uint8_t exponents[] = {0, 1, 2, 127, 200, 253, 254, 255};
  const uint64_t rows = sizeof(exponents), cols = 64;
  std::vector<uint8_t> data;
  for (const uint8_t e : exponents) {
    for (int b = 0; b < 2; ++b) {
      data.push_back(e);
      for (int j = 0; j < 16; ++j) data.push_back(static_cast<uint8_t>(b == 0 ? j | (15 - j) << 4 : (j * 7 + 3) % 16 | j << 4));
    }
  }
  const std::vector<float> table = dequantize_matrix(GgmlType::kMXFP4, data, rows, cols);
  const DeviceMatrix m = upload_matrix(device(), GgmlType::kMXFP4, rows, cols, data.data());
  std::vector<int32_t> ids(rows);
  std::iota(ids.begin(), ids.end(), 0);
  Buffer tok = upload(ids);
  Buffer out = upload(std::vector<float>(rows * cols, 42.0f));
  run([&](CommandBuffer& cmd) { ops().embed(cmd, m, tok.view(), uint32_t(rows), out.view(), uint32_t(cols)); });
  const std::vector<float> got = download<float>(out, rows * cols);
  for (uint64_t i = 0; i < rows * cols; ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &table[i], 4), 0)
        << "e " << int(exponents[i / cols]) << " col " << i % cols << ": " << got[i] << " vs " << table[i];
  }
}

TEST_F(OpsTest, GatherRowsOfAPlainBuffer) {
  const uint32_t rows = 9, cols = 13, stride = 17;
  const std::vector<float> table = random_floats(rows * stride, 8);
  const std::vector<int32_t> ids = {8, 0, 3, 3};
  Buffer tb = upload(table);
  Buffer ib = upload(ids);
  Buffer out = upload(std::vector<float>(ids.size() * cols, 0.0f));
  run([&](CommandBuffer& cmd) {
    ops().gather_rows(cmd, tb.view(), stride, rows, cols, ib.view(), uint32_t(ids.size()), out.view(), cols);
  });
  const std::vector<float> got = download<float>(out, ids.size() * cols);
  for (size_t t = 0; t < ids.size(); ++t) {
    for (uint32_t j = 0; j < cols; ++j) ASSERT_EQ(got[t * cols + j], table[ids[t] * stride + j]);
  }
}

TEST_F(OpsTest, RmsNormMatchesReference) {
  for (uint32_t dim : {172u, 64u, 1u, 2048u}) {
    const uint32_t rows = 33, stride = dim + 4;
    const std::vector<float> x = random_floats(rows * stride, dim, 3.0f);
    const std::vector<float> w = random_floats(dim, dim + 1);
    Buffer xb = upload(x), wb = upload(w), ob = upload(std::vector<float>(rows * stride, 0.0f));
    run([&](CommandBuffer& cmd) { ops().rmsnorm(cmd, xb.view(), stride, wb.view(), ob.view(), stride, rows, dim, 1e-5f); });
    const std::vector<float> got = download<float>(ob, rows * stride);
    std::vector<float> expected(rows * stride, 0.0f);
    for (uint32_t r = 0; r < rows; ++r) ref::rmsnorm(&expected[r * stride], &x[r * stride], w.data(), dim, 1e-5f);
    EXPECT_LT(normalized_error(got, expected), 1e-6) << "dim " << dim;
  }
}

TEST_F(OpsTest, RmsNormRowDoesNotDependOnBatch) {
  const uint32_t dim = 172, rows = 9;
  const std::vector<float> x = random_floats(rows * dim, 4);
  const std::vector<float> w = random_floats(dim, 5);
  Buffer xb = upload(x), wb = upload(w), all = upload(std::vector<float>(rows * dim, 0.0f));
  run([&](CommandBuffer& cmd) { ops().rmsnorm(cmd, xb.view(), dim, wb.view(), all.view(), dim, rows, dim, 1e-6f); });
  const std::vector<float> batch = download<float>(all, rows * dim);
  const std::vector<float> last(x.end() - dim, x.end());
  Buffer lb = upload(last), one = upload(std::vector<float>(dim, 0.0f));
  run([&](CommandBuffer& cmd) { ops().rmsnorm(cmd, lb.view(), dim, wb.view(), one.view(), dim, 1, dim, 1e-6f); });
  const std::vector<float> alone = download<float>(one, dim);
  EXPECT_TRUE(std::equal(alone.begin(), alone.end(), batch.end() - dim));
}

TEST_F(OpsTest, SwigluOnGateUpPairs) {
  const uint32_t rows = 5, hidden = 172, in_stride = 2 * hidden;
  const std::vector<float> gu = random_floats(rows * in_stride, 6, 4.0f);
  Buffer gb = upload(gu), ob = upload(std::vector<float>(rows * hidden, 0.0f));
  run([&](CommandBuffer& cmd) {
    ops().swiglu(cmd, gb.view(), gb.view(hidden * 4, VK_WHOLE_SIZE), in_stride, ob.view(), hidden, rows, hidden);
  });
  const std::vector<float> got = download<float>(ob, rows * hidden);
  std::vector<float> expected(rows * hidden);
  for (uint32_t r = 0; r < rows; ++r) {
    ref::swiglu(&expected[r * hidden], &gu[r * in_stride], &gu[r * in_stride + hidden], hidden);
  }
  EXPECT_LT(normalized_error(got, expected), 1e-6);
}

TEST_F(OpsTest, AddIsExact) {
  const uint32_t rows = 3, cols = 173;
  const std::vector<float> a = random_floats(rows * cols, 1), b = random_floats(rows * cols, 2);
  Buffer ab = upload(a), bb = upload(b);
  run([&](CommandBuffer& cmd) { ops().add(cmd, ab.view(), bb.view(), cols, ab.view(), cols, rows, cols); });
  const std::vector<float> got = download<float>(ab, rows * cols);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], a[i] + b[i]) << i;
}

TEST_F(OpsTest, ArgmaxPerRowWithTiesAndNaN) {
  const uint32_t rows = 7, cols = 1001, stride = 1004;
  std::vector<float> x = random_floats(rows * stride, 9);
  x[1 * stride + 500] = 100.0f;  // tie: the lower index wins
  x[1 * stride + 17] = 100.0f;
  x[2 * stride + 1000] = 50.0f;  // last column
  x[3 * stride + 0] = std::nanf("");  // NaN never wins
  x[3 * stride + 1] = 1e9f;
  for (uint32_t j = 0; j < cols; ++j) x[4 * stride + j] = -std::numeric_limits<float>::infinity();
  x[6 * stride + 1001] = 1e30f;  // padding past cols is ignored
  Buffer xb = upload(x), ob = upload(std::vector<int32_t>(rows, -1));
  run([&](CommandBuffer& cmd) { ops().argmax(cmd, xb.view(), stride, rows, cols, ob.view()); });
  const std::vector<int32_t> got = download<int32_t>(ob, rows);
  for (uint32_t r = 0; r < rows; ++r) {
    int32_t expected = 0;
    for (uint32_t j = 1; j < cols; ++j) {
      const float v = x[r * stride + j];
      if (!std::isnan(v) && (std::isnan(x[r * stride + expected]) || v > x[r * stride + expected])) expected = int32_t(j);
    }
    if (r != 3) {
      EXPECT_EQ(expected, ref::argmax(&x[r * stride], cols)) << "reference disagrees on row " << r;
    }
    EXPECT_EQ(got[r], expected) << "row " << r;
  }
  EXPECT_EQ(got[1], 17);
  EXPECT_EQ(got[2], 1000);
  EXPECT_EQ(got[3], 1);
  EXPECT_EQ(got[4], 0);
}

TEST_F(OpsTest, TopkSortedWithIndices) {
  const uint32_t rows = 5, cols = 1000, k = 40;
  std::vector<float> x = random_floats(rows * cols, 10);
  for (uint32_t j = 0; j < cols; j += 3) x[2 * cols + j] = 1.5f;  // many ties
  x[4 * cols + 7] = std::nanf("");
  expect_topk_matches_sort(x, rows, cols, k);
}

TEST_F(OpsTest, TopkOfTheLargestKOverAQwenSizedVocabulary) {
  // The longest loop paths: k = VKS_TOPK_MAX rounds over a 152,064-entry row (Qwen2.5's vocabulary)
  // and over 259,328 entries, the most topk_loop_iterations accepts (65,473 of 65,535 iterations):
  // a count that missed a loop of the kernel would fail here.
  // lavapipe ends an invocation's loops after 65,535 iterations in all; with the winners at the
  // end of the row a kernel that ran out of iterations would miss them.
  // The planted values (10 and up) are far above the N(0, 1) noise, so all 64 winners sit in the
  // last 448 entries.
  for (uint32_t cols : {152064u, 259328u}) {  // Qwen2.5's vocabulary; the largest the budget allows
    const uint32_t rows = 2, k = VKS_TOPK_MAX;
    ASSERT_LE(topk_loop_iterations(cols, k), uint64_t{VKS_LAVAPIPE_LOOP_BUDGET}) << cols;
    std::vector<float> x = random_floats(size_t{rows} * cols, 11);
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t j = 0; j < k; ++j) x[size_t{r} * cols + cols - 1 - 7 * j] = 10.0f + static_cast<float>(j % 5);
    }
    expect_topk_matches_sort(x, rows, cols, k);
  }
}

TEST(TopkLoopBudget, VocabulariesUpTo259kFitAtTheLargestK) {
  // Every architecture vkstream loads (llama, qwen2, qwen3) has a smaller vocabulary.
  EXPECT_LE(topk_loop_iterations(259328, VKS_TOPK_MAX), uint64_t{VKS_LAVAPIPE_LOOP_BUDGET});
  EXPECT_GT(topk_loop_iterations(259329, VKS_TOPK_MAX), uint64_t{VKS_LAVAPIPE_LOOP_BUDGET});
  // 64 rounds over 152,064 entries: 594 steps of 256, the scan's exit, 7 reduction levels and its
  // exit, the round itself; then the round loop's last test.
  EXPECT_EQ(topk_loop_iterations(152064, 64), 64u * (594u + 1u + 8u + 1u) + 1u);
}

TEST_F(OpsTest, BadArgumentsAreRejected) {
  Buffer b = upload(std::vector<float>(64, 0.0f));
  CommandBuffer cmd = device().create_command_buffer();
  cmd.begin();
  EXPECT_THROW(ops().topk(cmd, b.view(), 8, 1, 8, 9, b.view(), b.view()), Error);
  EXPECT_THROW(ops().topk(cmd, b.view(), 8, 1, 100, 65, b.view(), b.view()), Error);
  // Past lavapipe's loop budget: refused rather than silently truncated.
  EXPECT_THROW(ops().topk(cmd, b.view(), 300000, 1, 300000, 64, b.view(), b.view()), Error);
  EXPECT_THROW(ops().rmsnorm(cmd, b.view(), 4, b.view(), b.view(), 8, 1, 8, 1e-5f), Error);
  cmd.end();
}

}  // namespace
}  // namespace vks::vk::test
