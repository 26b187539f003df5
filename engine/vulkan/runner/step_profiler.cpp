#include "engine/vulkan/runner/step_profiler.h"

#include "engine/vulkan/core/vk_error.h"

namespace vks::vk {

StepProfiler::StepProfiler(const Device& device, uint32_t capacity) : device_(device.handle()), capacity_(capacity) {
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(device.physical(), &props);
  ns_per_tick_ = props.limits.timestampPeriod;
  VkQueryPoolCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = capacity;
  check(vkCreateQueryPool(device_, &info, nullptr, &pool_), "vkCreateQueryPool");
}

StepProfiler::~StepProfiler() {
  if (pool_ != VK_NULL_HANDLE) vkDestroyQueryPool(device_, pool_, nullptr);
}

void StepProfiler::begin(CommandBuffer& cmd) {
  labels_.clear();
  vkCmdResetQueryPool(cmd.handle(), pool_, 0, capacity_);
  vkCmdWriteTimestamp(cmd.handle(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 0);
}

void StepProfiler::mark(CommandBuffer& cmd, const char* label) {
  if (labels_.size() + 1 >= capacity_) return;  // out of queries: later ops go unmeasured
  labels_.push_back(label);
  vkCmdWriteTimestamp(cmd.handle(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_,
                      static_cast<uint32_t>(labels_.size()));
}

void StepProfiler::collect(std::map<std::string, double>& totals_ms) {
  const uint32_t n = static_cast<uint32_t>(labels_.size()) + 1;
  std::vector<uint64_t> stamps(n);
  check(vkGetQueryPoolResults(device_, pool_, 0, n, n * sizeof(uint64_t), stamps.data(), sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  for (uint32_t i = 1; i < n; ++i) {
    totals_ms[labels_[i - 1]] += static_cast<double>(stamps[i] - stamps[i - 1]) * ns_per_tick_ * 1e-6;
  }
}

}  // namespace vks::vk
