#pragma once
// What a layer does, described by behaviour rather than by architecture name (zeux/calm's way):
// the loader (llama_config.cpp) fills it from GGUF keys and the architecture table, the CPU forward
// pass and the Vulkan step recorder read it, and nothing else needs to know which family a file is.
// A dense feed-forward block is an expert block with one expert and no router.
#include <cstdint>

namespace vks {

// How a router's logits choose and weigh the experts a token runs (llama.cpp's build_moe_ffn).
struct ExpertRouting {
  enum class Order : uint8_t {
    kSoftmaxThenTopK,  // p = softmax(all logits); the n_used largest p, weighted by p (qwen3moe, Mixtral)
    kTopKThenSoftmax,  // the n_used largest logits, weighted by softmax over those only (gpt-oss)
  };
  Order order = Order::kSoftmaxThenTopK;
  bool normalize = false;  // divide the chosen weights by their sum (llama.cpp's norm_w)
};

// The gate's activation in down(act(gate x) * up x).
enum class FfnActivation : uint8_t { kSilu };

struct FfnSpec {
  uint32_t hidden = 0;     // rows of each expert's gate and up matrices
  uint32_t n_experts = 1;  // 1: a dense block (no router); more: ffn_gate_inp picks n_used of them
  uint32_t n_used = 1;
  ExpertRouting routing;
  FfnActivation activation = FfnActivation::kSilu;
  bool routed() const { return n_experts > 1; }
};

struct LayerSpec {
  FfnSpec ffn;
};

}  // namespace vks
