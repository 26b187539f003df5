#include "engine/model/architecture.h"

namespace vks {
namespace {

using R = TensorRule;
using P = ProjectionLayout;
constexpr ExpertRouting kSoftmaxTopKNormalized{ExpertRouting::Order::kSoftmaxThenTopK, true};

// A new architecture that varies these behaviours is a row here. Rules follow llama.cpp's loader
// and graphs: llama may carry Q/K/V biases, rope factors and (Mixtral layout) experts; qwen2 always
// has the biases, qwen3 the Q/K norms, qwen3moe both Q/K norms and experts; phi3 fuses its
// projections. llama.cpp's build_moe_ffn renormalizes the chosen softmax weights for llama and
// qwen3moe.
constexpr ArchitectureInfo kArchitectures[] = {
    {Arch::kLlama, "llama", RopeMode::kNorm, R::kOptional, R::kAbsent, R::kOptional, P::kSeparate, R::kOptional,
     kSoftmaxTopKNormalized},
    {Arch::kQwen2, "qwen2", RopeMode::kNeox, R::kRequired, R::kAbsent, R::kAbsent, P::kSeparate, R::kAbsent, {}},
    {Arch::kQwen3, "qwen3", RopeMode::kNeox, R::kAbsent, R::kRequired, R::kAbsent, P::kSeparate, R::kAbsent, {}},
    {Arch::kQwen3Moe, "qwen3moe", RopeMode::kNeox, R::kAbsent, R::kRequired, R::kAbsent, P::kSeparate, R::kRequired,
     kSoftmaxTopKNormalized},
    {Arch::kPhi3, "phi3", RopeMode::kNeox, R::kAbsent, R::kAbsent, R::kAbsent, P::kFused, R::kAbsent, {}},
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
