#include "engine/vulkan/runner/expert_split.h"

#include <fmt/format.h>

#include <charconv>
#include <climits>

#include "engine/common/error.h"

namespace vks::vk {
namespace {

constexpr double kMiB = 1 << 20;

ExpertSplit first_on_host(const WeightFootprint& f, uint32_t n) {
  ExpertSplit s;
  s.on_host.assign(f.expert_bytes.size(), false);
  s.device_bytes = f.fixed_bytes;
  s.device_buffers = f.fixed_buffers;
  for (size_t l = 0; l < f.expert_bytes.size(); ++l) {
    if (f.expert_bytes[l] == 0) continue;
    ++s.expert_layers;
    if (s.host_layers < n) {
      s.on_host[l] = true;
      ++s.host_layers;
      s.host_bytes += f.expert_bytes[l];
    } else {
      s.device_bytes += f.expert_bytes[l];
      s.device_buffers += f.expert_buffers[l];
    }
  }
  return s;
}

bool fits(const ExpertSplit& s, uint64_t budget) { return budget == 0 || s.device_bytes <= budget; }

}  // namespace

ExpertSplit split_experts(const WeightFootprint& footprint, int32_t requested, uint64_t budget,
                          const std::string& device) {
  if (requested < -1) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("cpu_expert_layers {} must be -1 (automatic) or a count of layers", requested));
  }
  const ExpertSplit all = first_on_host(footprint, UINT32_MAX);
  if (requested >= 0) {
    ExpertSplit s = first_on_host(footprint, static_cast<uint32_t>(requested));
    if (fits(s, budget)) return s;
    throw Error(ErrorCode::kOutOfMemory,
                fmt::format("the model's weights take {:.1f} MiB on {} with the experts of {} of its {} expert layers "
                            "on the CPU, and it has {:.1f} MiB for them; {}",
                            s.device_bytes / kMiB, device, s.host_layers, s.expert_layers, budget / kMiB,
                            fits(all, budget) ? "keep more layers' experts on the CPU (--cpu-experts, or leave it "
                                                "automatic)"
                                              : "run it on the CPU (--cpu) or use a smaller quantization"));
  }
  for (uint32_t n = 0; n <= all.host_layers; ++n) {
    ExpertSplit s = first_on_host(footprint, n);
    if (fits(s, budget)) return s;
  }
  throw Error(ErrorCode::kOutOfMemory,
              fmt::format("the model's weights take {:.1f} MiB on {}, which has {:.1f} MiB for them{}; run it on the "
                          "CPU (--cpu) or use a smaller quantization",
                          (all.device_bytes + all.host_bytes) / kMiB, device, budget / kMiB,
                          all.expert_layers == 0
                              ? ""
                              : fmt::format(" ({:.1f} MiB even with every expert layer's {:.1f} MiB of experts on the CPU)",
                                            all.device_bytes / kMiB, all.host_bytes / kMiB)));
}

int32_t parse_cpu_expert_layers(std::string_view text) {
  if (text == "auto") return -1;
  if (text == "all") return INT32_MAX;
  int32_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0 || text.empty()) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--cpu-experts {}: expected auto, all or a count of layers", text));
  }
  return n;
}

std::string describe_split(const ExpertSplit& s) {
  return fmt::format("experts of {} of {} expert layers on the CPU ({:.1f} MiB in host memory), {:.1f} MiB of weights "
                     "on the device",
                     s.host_layers, s.expert_layers, s.host_bytes / kMiB, s.device_bytes / kMiB);
}

}  // namespace vks::vk
