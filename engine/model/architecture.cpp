#include "engine/model/architecture.h"

namespace vks {
namespace {

// A new architecture that is a variant of these is a row here plus a branch per new tensor in the
// forward passes (engine/cpu/cpu_layer.cpp, the Vulkan runner). Rules follow llama.cpp's loader:
// llama may carry Q/K/V biases and rope factors, qwen2 always has the biases, qwen3 the Q/K norms.
constexpr ArchitectureInfo kArchitectures[] = {
    {Arch::kLlama, "llama", RopeMode::kNorm, TensorRule::kOptional, TensorRule::kAbsent, TensorRule::kOptional},
    {Arch::kQwen2, "qwen2", RopeMode::kNeox, TensorRule::kRequired, TensorRule::kAbsent, TensorRule::kAbsent},
    {Arch::kQwen3, "qwen3", RopeMode::kNeox, TensorRule::kAbsent, TensorRule::kRequired, TensorRule::kAbsent},
};

}  // namespace

const ArchitectureInfo* find_architecture(std::string_view name) {
  for (const ArchitectureInfo& a : kArchitectures) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const ArchitectureInfo& architecture_info(Arch arch) {
  for (const ArchitectureInfo& a : kArchitectures) {
    if (a.arch == arch) return a;
  }
  return kArchitectures[0];
}

std::string supported_architecture_names() {
  std::string list;
  for (const ArchitectureInfo& a : kArchitectures) list += (list.empty() ? "" : ", ") + std::string(a.name);
  return list;
}

std::string_view rope_mode_name(RopeMode mode) { return mode == RopeMode::kNeox ? "neox" : "norm"; }

}  // namespace vks
