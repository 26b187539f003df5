#pragma once
// Builds the compute backend for a loaded model, the Vulkan runner or the CPU runner, by the rule of
// backend_choice.h (the CPU runner when there is no device or only a CPU-type one such as
// lavapipe), and logs which and why.
#include <memory>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/model/model_runner.h"
#include "engine/vulkan/runner/runner_options.h"

namespace vks {

// Throws vks::Error: kDevice when no Vulkan device exists and the fallback is forbidden (the
// message says how to fix it), kNotFound when options.device matches no device,
// kOutOfMemory when weights or KV cache do not fit.
std::unique_ptr<ModelRunner> make_runner(const LlamaModel& model, const RunnerOptions& options);

}  // namespace vks
