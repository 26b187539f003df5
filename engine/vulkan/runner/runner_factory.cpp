#include "engine/vulkan/runner/runner_factory.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "engine/common/cpu_count.h"
#include "engine/common/error.h"
#include "engine/cpu/cpu_runner.h"
#include "engine/cpu/quant/isa.h"
#include "engine/model/kv_pools.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/backend_choice.h"
#include "engine/vulkan/runner/runner_warmup.h"
#include "engine/vulkan/runner/warm_stamp.h"
#include "engine/vulkan/runner/vulkan_runner.h"

namespace vks {
namespace {

std::unique_ptr<ModelRunner> make_cpu_runner(const LlamaModel& model, const RunnerOptions& options) {
  if (options.kv_type_k != options.kv_type_v) {
    throw Error(ErrorCode::kUnsupported,
                "the CPU backend quantizes keys and values together: --kv-type-k and --kv-type-v apart need the "
                "Vulkan backend (--vulkan)");
  }
  CpuRunnerOptions cpu;
  cpu.kv_type = options.kv_type_k;
  cpu.block_size = options.block_size;
  cpu.max_step_tokens = options.max_step_tokens;
  cpu.max_step_seqs = options.max_step_seqs;
  cpu.compute_share = options.compute_share;
  cpu.state_slots = options.live_state_slots();
  cpu.state_checkpoints = options.state_checkpoints;  // (the CPU allocates a slot once used)
  cpu.num_window_blocks = options.num_window_blocks;
  cpu.weights_in_memory = options.cpu_weights_in_memory;
  // The machine's count is read (sysfs, the cgroup) only when --threads leaves it to us.
  const CpuCount threads = options.cpu_threads > 0 ? CpuCount{options.cpu_threads, "--threads"} : default_cpu_threads();
  cpu.threads = threads.threads;
  spdlog::info("runner: the CPU backend runs {} {} ({})", cpu.threads, cpu.threads == 1 ? "thread" : "threads",
               threads.why);
  if (options.num_blocks > 0) {
    cpu.num_blocks = options.num_blocks;
  } else {
    // The window pool first (its size follows from the step limits), the rest of the budget to the full pool.
    const LlamaConfig& c = model.config();
    const uint64_t row_pair = CpuRunner::pool_row_bytes(cpu.kv_type, c.kv_dim()) * 2;
    const int32_t window_blocks = resolve_window_blocks(c, options.num_window_blocks, options.block_size,
                                                        options.max_step_seqs, options.max_step_tokens, 0);
    const uint64_t full_layers = window_blocks > 0 ? n_full_pool_layers(c) : c.n_attention_layers();
    const uint64_t window_layers = window_blocks > 0 ? n_window_pool_layers(c) : 0;
    const uint64_t block = uint64_t(options.block_size) * row_pair;
    const KvPoolSplit split = split_kv_budget(options.kv_budget_bytes, block * full_layers, block * window_layers,
                                              static_cast<uint64_t>(window_blocks));
    const auto clamp = [](uint64_t blocks) { return static_cast<int32_t>(std::clamp<uint64_t>(blocks, 1, INT32_MAX)); };
    cpu.num_blocks = clamp(split.full_blocks);
    cpu.num_window_blocks = window_blocks > 0 ? clamp(split.window_blocks) : 0;
  }
  auto runner = std::make_unique<CpuRunner>(model, cpu);
  const WeightsResidence& residence = runner->weights_residence();
  if (residence.copied) {
    spdlog::info("runner: the CPU backend reads its weight matrices from memory ({} MiB{}; {} packed for the {} "
                 "kernels)",
                 step_matrix_bytes(model.weights()) >> 20,
                 residence.huge_pages ? ", transparent huge pages requested" : "", runner->packed_matrices(),
                 cpuq::isa_name(cpuq::active_isa()));
  } else {
    spdlog::info("runner: the CPU backend reads the weights from the mapped file: {}", residence.why_not);
  }
  return runner;
}

}  // namespace

std::unique_ptr<ModelRunner> make_runner(const LlamaModel& model, const RunnerOptions& requested) {
  const DeviceSelection selection = select_runner_device(requested);
  const RunnerOptions& options = selection.options;
  if (!options.force_cpu && selection.devices.empty() && !options.allow_cpu_fallback) {
    throw Error(ErrorCode::kDevice,
                "no Vulkan device found and CPU fallback is disabled: install a Vulkan driver (for a CPU device, "
                "Debian's mesa-vulkan-drivers gives lavapipe; check with `vulkaninfo --summary`), or run without "
                "--vulkan / --no-cpu-fallback to use the CPU backend");
  }
  const vk::DeviceInfo* device = selection.device();
  const BackendChoice choice = choose_backend(device, options, step_matrix_bytes(model.weights()));
  if (choice.backend == Backend::kCpu) {
    if (device == nullptr && !options.force_cpu) {
      spdlog::warn("runner: no Vulkan device found; running on the CPU backend. A GPU's Vulkan driver (e.g. "
                   "mesa-vulkan-drivers for AMD and Intel) lets vkstream use the GPU");
    } else {
      spdlog::info("runner: CPU backend: {}", choice.reason);
    }
    return make_cpu_runner(model, options);
  }
  spdlog::info("runner: Vulkan: {}", choice.reason);
  try {
    auto runner = std::make_unique<VulkanRunner>(model, options);
    if (options.warm_up) {
      const std::string stamp = warm_stamp_path(runner->device_info(), runner->kernel_fingerprint());
      if (warm_stamp_present(stamp)) {
        spdlog::info("runner: warm-up skipped: an earlier start compiled these kernels into the shader cache ({})",
                     stamp);
      } else {
        const WarmUpReport warm = warm_up_runner(*runner);
        write_warm_stamp(stamp);
        spdlog::info("runner: kernels compiled and warmed up in {:.0f} ms ({} steps; a warm shader cache makes this fast)",
                     warm.milliseconds, warm.steps);
      }
    }
    return runner;
  } catch (const Error& e) {
    // A device that exists but cannot be used (driver failure) is like no device at all; bad
    // options, missing selectors and out-of-memory are the caller's to fix and propagate.
    if (e.code() != ErrorCode::kDevice || !options.allow_cpu_fallback) throw;
    spdlog::warn("runner: Vulkan device unusable ({}); falling back to the CPU backend", e.what());
    return make_cpu_runner(model, options);
  }
}

}  // namespace vks
