// Half-precision values in the shaders (halves.glsl): unpackHalf2x16 or integer steps, whichever the
// device takes (DeviceInfo::halves_by_integer_steps), give every half's float, so weights, scales and
// products have the same bits either way. The integer steps are what Debian 12's arm64 lavapipe
// runs; here both run on one device (DeviceOptions::halves_by_integer_steps forces each).
#include <cmath>
#include <cstring>
#include <numeric>

#include "tests/vulkan/kernels_test_util.h"

namespace vks::vk::test {
namespace {

TEST(HalvesNeedIntegerSteps, OnlyLavapipeOnAnAarch64Host) {
  EXPECT_TRUE(halves_need_integer_steps(VK_DRIVER_ID_MESA_LLVMPIPE, true));
  EXPECT_FALSE(halves_need_integer_steps(VK_DRIVER_ID_MESA_LLVMPIPE, false));
  EXPECT_FALSE(halves_need_integer_steps(VK_DRIVER_ID_NVIDIA_PROPRIETARY, true));
  EXPECT_FALSE(halves_need_integer_steps(VK_DRIVER_ID_MESA_RADV, false));
}

// One device per conversion: [0] unpackHalf2x16 (none where the device's rule takes the integer
// steps: its compiler gets unpackHalf2x16 wrong, or aborts), [1] integer steps.
class HalvesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::vector<DeviceInfo> devices = list_devices();
    if (devices.empty()) return;
    const bool unpack_works = !devices[select_device(devices, device_selector(""))].halves_by_integer_steps;
    for (int steps = unpack_works ? 0 : 1; steps < 2; ++steps) {
      DeviceOptions options;
      options.disk_pipeline_cache = false;
      options.halves_by_integer_steps = steps;
      gpus_[steps] = std::make_unique<Gpu>(Device::create(options));
    }
  }
  static void TearDownTestSuite() {
    for (auto& gpu : gpus_) gpu.reset();
  }
  void SetUp() override {
    if (!gpus_[1]) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device found (install mesa-vulkan-drivers for lavapipe); skipping");
  }

  // Every row of the matrix gathered by the embedding kernel on gpu `steps`.
  static std::vector<float> embed_all(int steps, GgmlType type, const std::vector<uint8_t>& data, uint64_t rows,
                                      uint64_t cols) {
    const Gpu& gpu = *gpus_[steps];
    const DeviceMatrix m = upload_matrix(gpu.device, type, rows, cols, data.data());
    std::vector<int32_t> ids(rows);
    std::iota(ids.begin(), ids.end(), 0);
    Buffer tok = upload_to(gpu.device, ids);
    Buffer out = upload_to(gpu.device, std::vector<float>(rows * cols, 42.0f));
    run_on(gpu.device, [&](CommandBuffer& cmd) { gpu.ops.embed(cmd, m, tok.view(), uint32_t(rows), out.view(), uint32_t(cols)); });
    return download_from<float>(gpu.device, out, rows * cols);
  }

  // Every float equal to the CPU's bits (NaNs: NaN, their payloads are the device's).
  static void expect_cpu_bits(const std::vector<float>& got, const std::vector<float>& cpu, const char* what) {
    ASSERT_EQ(got.size(), cpu.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(got[i]) && std::isnan(cpu[i])) continue;
      ASSERT_EQ(std::memcmp(&got[i], &cpu[i], 4), 0) << what << " element " << i << ": " << got[i] << " vs " << cpu[i];
    }
  }

  static inline std::unique_ptr<Gpu> gpus_[2];
};

TEST_F(HalvesTest, EveryHalfAsAnF16WeightOrAQ8_0ScaleGivesTheCpusFloat) {
  // F16: the 65,536 halves as 64 rows of 1,024 weights.
  std::vector<uint8_t> f16(65536 * 2);
  for (uint32_t h = 0; h < 65536; ++h) std::memcpy(&f16[2 * h], &h, 2);
  // Q8_0: each half the scale of one block; weight 0 is 1 (the scale itself), 1 is -1, 2 is 0.
  std::vector<uint8_t> q8;
  for (uint32_t h = 0; h < 65536; ++h) {
    q8.push_back(static_cast<uint8_t>(h & 255));
    q8.push_back(static_cast<uint8_t>(h >> 8));
    for (int i = 0; i < 32; ++i) q8.push_back(static_cast<uint8_t>(i == 0 ? 1 : i == 1 ? -1 : i == 2 ? 0 : i * 37 - 128));
  }
  const std::vector<float> f16_cpu = dequantize_matrix(GgmlType::kF16, f16, 64, 1024);
  const std::vector<float> q8_cpu = dequantize_matrix(GgmlType::kQ8_0, q8, 2048, 1024);
  for (int steps = 0; steps < 2; ++steps) {
    if (!gpus_[steps]) continue;
    SCOPED_TRACE(steps == 1 ? "integer steps" : "unpackHalf2x16");
    ASSERT_EQ(gpus_[steps]->device.info().halves_by_integer_steps, steps == 1);
    expect_cpu_bits(embed_all(steps, GgmlType::kF16, f16, 64, 1024), f16_cpu, "F16");
    expect_cpu_bits(embed_all(steps, GgmlType::kQ8_0, q8, 2048, 1024), q8_cpu, "Q8_0");
  }
}

TEST_F(HalvesTest, ProductsHaveTheSameBitsEitherWay) {
  if (!gpus_[0]) GTEST_SKIP() << "this device takes the integer steps only: its unpackHalf2x16 is wrong";
  // Weights that are halves (F16) and a K-quant's half d and dmin through both matrix families (a
  // block's single half scale is the embedding test's Q8_0). One token: the conversion is
  // load_group's, the same code at every token count, and each pipeline costs seconds to compile.
  const uint64_t rows = 40, cols = 256;
  const std::vector<float> x = random_floats(cols, 31);
  for (GgmlType type : {GgmlType::kF16, GgmlType::kQ4_K}) {
    const std::vector<uint8_t> data = ggml_matrix(type, rows, cols, 30);
    for (MatmulFamily family : {MatmulFamily::kRows, MatmulFamily::kLanes}) {
      std::vector<float> outs[2];
      for (int steps = 0; steps < 2; ++steps) {
        const Gpu& gpu = *gpus_[steps];
        const Ops& o = family == MatmulFamily::kLanes ? gpu.lanes_ops : gpu.ops;
        const DeviceMatrix m = upload_matrix(gpu.device, type, rows, cols, data.data());
        Buffer xb = upload_to(gpu.device, x), yb = upload_to(gpu.device, std::vector<float>(rows, -7.0f));
        run_on(gpu.device, [&](CommandBuffer& cmd) { o.matmul(cmd, m, xb.view(), cols, yb.view(), rows, 1); });
        outs[steps] = download_from<float>(gpu.device, yb, rows);
      }
      EXPECT_EQ(std::memcmp(outs[0].data(), outs[1].data(), rows * 4), 0)
          << ggml_type_name(type) << " " << matmul_family_name(family);
      EXPECT_NE(outs[1].back(), -7.0f) << "the last output was never written";
    }
  }
}

}  // namespace
}  // namespace vks::vk::test
