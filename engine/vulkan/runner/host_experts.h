#pragma once
// The experts a Vulkan runner leaves in host memory (ExpertSplit), run on the CPU: the normed rows
// of a step come from the device, the CPU backend's expert block (expert_ffn: the router, routing,
// grouping by expert, the quantized kernels on the mmapped GGUF blocks) computes their weighted
// sum, and the device adds it to the residual. The CPU's bits: the same ids and weights as the CPU
// backend, whatever the batch.
#include <cstdint>

#include "engine/common/thread_pool.h"
#include "engine/cpu/cpu_layer.h"
#include "engine/model/llama_model.h"

namespace vks::vk {

class HostExperts {
 public:
  // Buffers for steps of up to max_tokens rows, allocated here once. `model` must outlive this.
  HostExperts(const LlamaModel& model, uint32_t max_tokens);

  // Layer l's routed experts over n rows: xn the experts' normed inputs, x the residual (read where
  // the router norms it itself), out the weighted sum; rows `stride` floats apart.
  void run(uint32_t l, const float* xn, const float* x, uint32_t stride, uint32_t n, float* out);

 private:
  const LlamaModel& model_;
  CpuModelVectors vectors_;
  CpuActivations acts_;
  ThreadPool pool_;
};

}  // namespace vks::vk
