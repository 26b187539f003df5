// The start-up self-test of batch invariance (engine/vulkan/runner/invariance_check.h) on this
// device: every family passes it for the types a model may use, and settling keeps a passing family.
#include <gtest/gtest.h>

#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/invariance_check.h"
#include "tests/common/vulkan_skip.h"

namespace vks::vk {
namespace {

class InvarianceCheck : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (list_devices().empty()) return;
    DeviceOptions options;
    options.disk_pipeline_cache = false;
    device_ = std::make_unique<Device>(Device::create(options));
    kernels_ = std::make_unique<KernelRegistry>(*device_);
  }
  static void TearDownTestSuite() {
    kernels_.reset();
    device_.reset();
  }
  void SetUp() override {
    if (!device_) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  }
  static inline std::unique_ptr<Device> device_;
  static inline std::unique_ptr<KernelRegistry> kernels_;
};

TEST_F(InvarianceCheck, EveryFamilyGivesATokenItsBitsInABatch) {
  std::vector<MatmulFamily> families{MatmulFamily::kRows, MatmulFamily::kLanes};
  if (device_->info().integer_dot) families.push_back(MatmulFamily::kDot);
  for (MatmulFamily family : families) {
    for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kF16}) {  // each compiles its pipelines on lavapipe
      // 40 tokens: the lanes kernels' 8-token tile and the rows family's matmul kernel, each token
      // against the single-token path.
      EXPECT_EQ(batch_invariance_mismatch(*device_, *kernels_, family, 8, type, 40), "")
          << matmul_family_name(family) << " " << ggml_type_name(type);
    }
  }
}

TEST_F(InvarianceCheck, SettlingKeepsAFamilyThatPasses) {
  // Not forced: each family is kept only because its check passes (a forced one is kept anyway).
  const std::set<GgmlType> types{GgmlType::kQ4_0};
  for (MatmulFamily family : {MatmulFamily::kLanes, MatmulFamily::kRows}) {
    EXPECT_EQ(settle_matmul_family(*device_, *kernels_, family, false, 8, types, 20), family)
        << matmul_family_name(family);
  }
}

}  // namespace
}  // namespace vks::vk
