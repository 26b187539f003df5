// The small kernels the architectures beyond llama add (bias add, per-head RMSNorm; Gemma's GeGLU,
// embedding scale and soft-cap; gpt-oss's clamped SwiGLU) against plain C++ references on awkward
// sizes, and the device format table's refusal of unsupported types.
#include <cmath>
#include <cstring>
#include <string>

#include "engine/common/error.h"
#include "engine/cpu/reference_ops.h"
#include "engine/vulkan/kernels/device_format.h"
#include "tests/vulkan/kernels_test_util.h"

namespace vks::vk::test {
namespace {

using ArchOpsTest = KernelTest;

TEST_F(ArchOpsTest, BiasAddAddsTheBiasToEveryRowOnly) {
  for (uint32_t cols : {1u, 67u, 200u}) {
    const uint32_t rows = 11, stride = cols + 5;
    const std::vector<float> x = random_floats(rows * stride, cols);
    const std::vector<float> bias = random_floats(cols, cols + 1);
    Buffer xb = upload(x), bb = upload(bias);
    run([&](CommandBuffer& cmd) { ops().bias_add(cmd, xb.view(), stride, bb.view(), rows, cols); });
    const std::vector<float> got = download<float>(xb, rows * stride);
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t i = 0; i < stride; ++i) {
        const float expected = i < cols ? x[r * stride + i] + bias[i] : x[r * stride + i];
        ASSERT_EQ(got[r * stride + i], expected) << "cols " << cols << " row " << r << " col " << i;
      }
    }
  }
}

// Per-expert biases on rows grouped by expert (gpt-oss): each row gets the bias row its id names,
// a negative id none; columns past cols and the padding stay as they were.
TEST_F(ArchOpsTest, BiasAddRowsAddsEachRowItsOwnBiasRow) {
  const uint32_t rows = 9, cols = 70, stride = 76, bias_stride = 80, n_bias = 4;
  const std::vector<int32_t> ids{3, 3, 0, 2, -1, 1, 1, 1, 0};
  const std::vector<float> x = random_floats(rows * stride, 11);
  const std::vector<float> bias = random_floats(n_bias * bias_stride, 12);
  Buffer xb = upload(x), bb = upload(bias), ib = upload(ids);
  run([&](CommandBuffer& cmd) { ops().bias_add_rows(cmd, xb.view(), stride, bb.view(), bias_stride, ib.view(), rows, cols); });
  const std::vector<float> got = download<float>(xb, rows * stride);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t i = 0; i < stride; ++i) {
      const bool added = i < cols && ids[r] >= 0;
      const float expected = added ? x[r * stride + i] + bias[uint32_t(ids[r]) * bias_stride + i] : x[r * stride + i];
      ASSERT_EQ(got[r * stride + i], expected) << "row " << r << " col " << i;
    }
  }
}

TEST_F(ArchOpsTest, PerHeadRmsNormMatchesReference) {
  struct Case {
    uint32_t rows, heads, head_dim, stride;
  };
  for (const Case c : {Case{7, 3, 64, 200}, Case{5, 16, 128, 2048 + 12}, Case{9, 5, 10, 53}}) {
    const std::vector<float> x = random_floats(c.rows * c.stride, c.head_dim, 2.0f);
    const std::vector<float> w = random_floats(c.head_dim, c.head_dim + 1);
    Buffer xb = upload(x), wb = upload(w);
    run([&](CommandBuffer& cmd) {
      ops().rmsnorm_heads(cmd, xb.view(), c.stride, wb.view(), c.rows, c.heads, c.head_dim, 1e-6f);
    });
    const std::vector<float> got = download<float>(xb, c.rows * c.stride);
    std::vector<float> expected = x;
    for (uint32_t r = 0; r < c.rows; ++r) {
      for (uint32_t h = 0; h < c.heads; ++h) {
        const size_t at = size_t{r} * c.stride + size_t{h} * c.head_dim;
        ref::rmsnorm(&expected[at], &x[at], w.data(), c.head_dim, 1e-6f);
      }
    }
    EXPECT_LT(normalized_error(got, expected), 1e-6) << "heads " << c.heads << " head_dim " << c.head_dim;
    // Columns past the heads are untouched.
    for (uint32_t r = 0; r < c.rows; ++r) {
      for (uint32_t i = c.heads * c.head_dim; i < c.stride; ++i) ASSERT_EQ(got[r * c.stride + i], x[r * c.stride + i]);
    }
  }
}

TEST_F(ArchOpsTest, GatedActivationsMatchReference) {
  const uint32_t rows = 5, hidden = 172, in_stride = 2 * hidden;
  // Gates and ups past gpt-oss's clamp (7) on both sides.
  const std::vector<float> gu = random_floats(rows * in_stride, 6, 12.0f);
  for (const FfnActivation act : {FfnActivation::kGeluTanh, FfnActivation::kSwigluOai}) {
    Buffer gb = upload(gu), ob = upload(std::vector<float>(rows * hidden, 0.0f));
    run([&](CommandBuffer& cmd) {
      const BufferView up = gb.view(hidden * 4, VK_WHOLE_SIZE);
      if (act == FfnActivation::kGeluTanh) {
        ops().geglu(cmd, gb.view(), up, in_stride, ob.view(), hidden, rows, hidden);
      } else {
        ops().swiglu_oai(cmd, gb.view(), up, in_stride, ob.view(), hidden, rows, hidden);
      }
    });
    const std::vector<float> got = download<float>(ob, rows * hidden);
    std::vector<float> expected(rows * hidden);
    for (uint32_t r = 0; r < rows; ++r) {
      ref::ffn_activation(act, &expected[r * hidden], &gu[r * in_stride], &gu[r * in_stride + hidden], hidden);
    }
    EXPECT_LT(normalized_error(got, expected), 1e-6) << static_cast<int>(act);
  }
}

TEST_F(ArchOpsTest, ScaleAndSoftcapTouchOnlyTheirColumns) {
  const uint32_t rows = 3, cols = 130, stride = 136;
  const std::vector<float> x = random_floats(rows * stride, 9, 80.0f);
  Buffer sb = upload(x), cb = upload(x);
  run([&](CommandBuffer& cmd) {
    ops().scale(cmd, sb.view(), stride, rows, cols, 11.3137f);
    ops().softcap(cmd, cb.view(), stride, rows, cols, 30.0f);
  });
  const std::vector<float> scaled = download<float>(sb, rows * stride);
  const std::vector<float> capped = download<float>(cb, rows * stride);
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<float> want(&x[r * stride], &x[r * stride] + cols);
    ref::softcap(want.data(), cols, 30.0f);
    for (uint32_t i = 0; i < stride; ++i) {
      const float v = x[r * stride + i];
      ASSERT_EQ(scaled[r * stride + i], i < cols ? v * 11.3137f : v) << r << "," << i;
      if (i < cols) {
        ASSERT_NEAR(capped[r * stride + i], want[i], 1e-5f * 30.0f) << r << "," << i;
        ASSERT_LE(std::fabs(capped[r * stride + i]), 30.0f);
      } else {
        ASSERT_EQ(capped[r * stride + i], v);
      }
    }
  }
}

TEST(DeviceFormatTable, RowsAreConsistentAndUnsupportedTypesAreRefusedByName) {
  for (const DeviceFormat& f : device_formats()) {
    EXPECT_EQ(find_device_format(f.source), &f) << f.suffix;
    EXPECT_LT(f.kernel_slot, device_kernel_slot_count()) << f.suffix;
    EXPECT_NE(f.convert_row, nullptr) << f.suffix;
    EXPECT_TRUE(find_embedded_shader(f.kernel_name(WeightOp::kMatvec)) != nullptr) << f.suffix;
    EXPECT_TRUE(find_embedded_shader(f.kernel_name(WeightOp::kMatmul)) != nullptr) << f.suffix;
    EXPECT_TRUE(find_embedded_shader(f.kernel_name(WeightOp::kEmbed)) != nullptr) << f.suffix;
    EXPECT_TRUE(find_embedded_shader(f.kernel_name(WeightOp::kLanes)) != nullptr) << f.suffix;
    if (f.blocked()) {
      EXPECT_EQ(f.block % 32, 0u) << f.suffix;
      EXPECT_EQ(f.quant_bytes_per_32 % 16, 0u) << f.suffix;  // a group is whole uvec4s
    }
  }
  EXPECT_EQ(find_device_format(GgmlType::kQ8_K), nullptr);
  EXPECT_EQ(kernel_type_suffix(GgmlType::kQ8_K), std::string("unsupported"));
  EXPECT_NE(supported_device_type_names().find("q4_0"), std::string::npos);
}

TEST_F(ArchOpsTest, UploadRefusesAnUnsupportedTypeWithTheListOfSupportedOnes) {
  const std::vector<uint8_t> data(4096, 0);
  try {
    upload_matrix(device(), GgmlType::kQ8_K, 2, 256, data.data());
    FAIL() << "q8_K uploaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("q8_K"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(supported_device_type_names()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vks::vk::test
