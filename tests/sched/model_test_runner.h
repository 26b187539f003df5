#pragma once
// The runner the model-backed speculation tests decode with: the CPU backend, or Vulkan in a test's
// Vulkan build (compiled with VKS_SCHED_TEST_VULKAN). Block size 4, up to 32 sequences a step.
#include <cstdint>
#include <memory>

#include "engine/model/llama_model.h"
#include "engine/model/model_runner.h"
#ifdef VKS_SCHED_TEST_VULKAN
#include "engine/vulkan/runner/runner_factory.h"
#else
#include "engine/cpu/cpu_runner.h"
#endif

namespace vks::test {

// Throws vks::Error(kDevice) in the Vulkan build where no device runs.
inline std::unique_ptr<ModelRunner> model_test_runner(const LlamaModel& m, int32_t num_blocks) {
#ifdef VKS_SCHED_TEST_VULKAN
  RunnerOptions o;
  o.allow_cpu_fallback = false;
  o.force_vulkan = true;
  o.block_size = 4;
  o.num_blocks = num_blocks;
  o.max_step_tokens = 128;
  o.max_step_seqs = 32;
  return make_runner(m, o);
#else
  CpuRunnerOptions o;
  o.block_size = 4;
  o.num_blocks = num_blocks;
  o.threads = 2;
  o.max_step_seqs = 32;
  return std::make_unique<CpuRunner>(m, o);
#endif
}

}  // namespace vks::test
