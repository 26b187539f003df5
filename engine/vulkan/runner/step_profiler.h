#pragma once
// Optional per-dispatch GPU timing of a step: a timestamp after each labelled op, read back after
// the fence. Labels are aggregated ("matmul.wqkv" over all layers) so a benchmark can print where
// the step time goes.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/vulkan/core/command.h"
#include "engine/vulkan/core/device.h"

namespace vks::vk {

class StepProfiler {
 public:
  StepProfiler(const Device& device, uint32_t capacity);
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  void begin(CommandBuffer& cmd);                      // resets the queries, writes the first stamp
  void mark(CommandBuffer& cmd, const char* label);    // time since the previous stamp -> label
  // After the step's fence: adds this step's per-label milliseconds into totals.
  void collect(std::map<std::string, double>& totals_ms);

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  uint32_t capacity_ = 0;
  double ns_per_tick_ = 1.0;
  std::vector<const char*> labels_;  // label of stamp i+1
};

}  // namespace vks::vk
