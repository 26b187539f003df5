// How upload_weights lays a model's matrices on the device: Q, K, V stacked as far as their types
// allow (one dispatch per block), with the rows each block writes.
#include <gtest/gtest.h>

#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/device_weights.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"

namespace vks::vk {
namespace {

TEST(DeviceWeights, QkvStacksRunsOfOneType) {
  if (list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  // A Q4_K_M file: Q, K, V all Q4_K in layers 0-1; V in Q6_K (use_more_bits) in layers 2-3.
  auto model = LlamaModel::load(test::model_path("kquant-q4_k_m.gguf"));
  ASSERT_EQ(model->weights().layers[0].wv.type, GgmlType::kQ4_K);  // the file has both kinds of layer
  ASSERT_EQ(model->weights().layers[2].wv.type, GgmlType::kQ6_K);
  const LlamaConfig& c = model->config();
  Device device = Device::create();
  const auto weights = upload_weights(device, *model);
  ASSERT_EQ(weights->layers.size(), 4u);
  for (size_t l = 0; l < 4; ++l) {
    const auto& qkv = weights->layers[l].qkv;
    const LayerWeights& src = model->weights().layers[l];
    if (src.wv.type == src.wq.type) {
      ASSERT_EQ(qkv.size(), 1u) << "layer " << l;
      EXPECT_EQ(qkv[0].matrix.rows, c.q_dim() + 2 * c.kv_dim());
      EXPECT_EQ(qkv[0].first_row, 0u);
    } else {
      ASSERT_EQ(qkv.size(), 2u) << "layer " << l << ": q|k stacked, v alone";
      EXPECT_EQ(qkv[0].matrix.rows, c.q_dim() + c.kv_dim());
      EXPECT_EQ(qkv[0].matrix.type, GgmlType::kQ4_K);
      EXPECT_EQ(qkv[0].first_row, 0u);
      EXPECT_EQ(qkv[1].matrix.rows, c.kv_dim());
      EXPECT_EQ(qkv[1].matrix.type, GgmlType::kQ6_K);
      EXPECT_EQ(qkv[1].first_row, c.q_dim() + c.kv_dim());
    }
  }
}

}  // namespace
}  // namespace vks::vk
