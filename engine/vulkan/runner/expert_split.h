#pragma once
// Which expert layers keep their experts in host memory (llama.cpp's --n-cpu-moe): the expert
// stacks (ffn_*_exps and their biases) of the first N expert layers stay in the mmapped file and
// run on the CPU, everything else (attention, router, shared expert) goes to the device. Pure
// arithmetic over the weights' device sizes, so a test can force any split with a small budget.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vks::vk {

// The device bytes and buffers of a model's weights: each layer's expert stacks (0 for a layer
// without routed experts), and everything else.
struct WeightFootprint {
  uint64_t fixed_bytes = 0, fixed_buffers = 0;
  std::vector<uint64_t> expert_bytes, expert_buffers;  // per layer
};

struct ExpertSplit {
  std::vector<bool> on_host;     // per layer: its experts stay in host memory and run on the CPU
  uint32_t host_layers = 0;      // layers on the host (the first of the expert layers)
  uint32_t expert_layers = 0;    // layers with routed experts
  uint64_t host_bytes = 0;       // their experts' bytes, read from the mmapped file
  uint64_t device_bytes = 0;     // the weights uploaded to the device
  uint64_t device_buffers = 0;
  bool any_on_host() const { return host_layers > 0; }
};

// requested >= 0: the experts of the first `requested` expert layers on the host (all of them when
// it is larger). -1: the fewest that make the device's weights fit `budget` bytes (0: no limit).
// Throws vks::Error kOutOfMemory, with the sizes, when the choice does not fit (automatic: not even
// with every expert layer on the host) and kInvalidArgument for a requested count below -1.
// `device` names the device in the message.
ExpertSplit split_experts(const WeightFootprint& footprint, int32_t requested, uint64_t budget,
                          const std::string& device);

// The command lines' --cpu-experts: "auto" -1, "all" every expert layer, or a count. Throws vks::Error
// kInvalidArgument for anything else.
int32_t parse_cpu_expert_layers(std::string_view text);

// "experts of 3 of 8 expert layers on the CPU (412.0 MiB in host memory), 120.5 MiB of weights on the device".
std::string describe_split(const ExpertSplit& split);

}  // namespace vks::vk
