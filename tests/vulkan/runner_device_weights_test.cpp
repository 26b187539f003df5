// How upload_weights lays a model's matrices on the device: Q, K, V stacked as far as their types
// allow (one dispatch per block), with the rows each block writes; a layer's experts stacked into
// one matrix per projection (one binding for every expert), each expert a block of rows.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

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

// Row r of a matrix as its device bytes: the quant-plane row, then the side-plane row.
std::vector<uint8_t> device_row(const Device& device, const DeviceMatrix& m, uint64_t r) {
  EXPECT_EQ(m.storage.part_count(), 1u);
  const uint64_t q = device_quant_row_bytes(*m.format, m.cols), side = device_side_row_bytes(*m.format, m.cols);
  std::vector<uint8_t> row(q + side);
  device.download(m.storage.parts[0], r * q, row.data(), q);
  if (side > 0) device.download(m.storage.parts[0], uint64_t{m.d_offset[0]} * 4 + r * side, row.data() + q, side);
  return row;
}

TEST(DeviceWeights, ExpertsStackIntoOneMatrixPerProjection) {
  if (list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  auto model = LlamaModel::load(test::model_path("qwen3moe-tiny.gguf"));
  const LlamaConfig& c = model->config();
  Device device = Device::create();
  const auto weights = upload_weights(device, *model);
  for (size_t l = 0; l < c.n_layers; ++l) {
    const FfnSpec& spec = c.layers[l].ffn;
    ASSERT_GT(spec.n_experts, 1u) << "layer " << l;
    const DeviceFfn& f = weights->layers[l].ffn;
    EXPECT_EQ(f.n_experts, spec.n_experts);
    EXPECT_EQ(f.hidden, spec.hidden);
    ASSERT_TRUE(f.gate_up_fused) << "layer " << l;
    EXPECT_EQ(f.w_gate_up.rows, uint64_t{spec.n_experts} * 2 * spec.hidden);
    EXPECT_EQ(f.w_gate_up.storage.part_count(), 1u);
    EXPECT_EQ(f.w_down.rows, uint64_t{spec.n_experts} * c.dim);
    EXPECT_EQ(f.w_down.storage.part_count(), 1u);
    // Expert e's block is its gate rows, then its up rows, as one expert's own gate|up matrix.
    const LayerWeights& src = model->weights().layers[l];
    for (uint32_t e : {0u, spec.n_experts - 1}) {
      const TensorRef gate = expert_matrix(src.w_gate, e, spec.hidden), up = expert_matrix(src.w_up, e, spec.hidden);
      const std::array<StackedSource, 2> own{StackedSource{gate.data, gate.rows}, StackedSource{up.data, up.rows}};
      const DeviceMatrix alone = upload_stacked_matrix(device, gate.type, gate.cols, own);
      for (uint64_t r : {uint64_t{0}, uint64_t{spec.hidden}, uint64_t{2} * spec.hidden - 1}) {
        EXPECT_EQ(device_row(device, f.w_gate_up, uint64_t{e} * 2 * spec.hidden + r), device_row(device, alone, r))
            << "layer " << l << " expert " << e << " row " << r;
      }
      const DeviceMatrix down = upload_matrix(device, expert_matrix(src.w_down, e, c.dim));
      EXPECT_EQ(device_row(device, f.w_down, uint64_t{e} * c.dim + c.dim - 1), device_row(device, down, c.dim - 1))
          << "layer " << l << " expert " << e;
    }
  }
}

}  // namespace
}  // namespace vks::vk
