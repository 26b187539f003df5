#include "engine/cpu/quant/isa.h"

#include <cstdlib>

namespace vks::cpuq {

std::string_view isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx: return "avx";
    case CpuIsa::kAvx2: return "avx2";
  }
  return "scalar";
}

std::optional<CpuIsa> isa_from_name(std::string_view name) {
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx, CpuIsa::kAvx2}) {
    if (isa_name(isa) == name) return isa;
  }
  return std::nullopt;
}

CpuIsa detected_isa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx = __builtin_cpu_supports("avx") && __builtin_cpu_supports("ssse3") &&
                   __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("f16c");
  if (avx && __builtin_cpu_supports("avx2")) return CpuIsa::kAvx2;
  if (avx) return CpuIsa::kAvx;
#endif
  return CpuIsa::kScalar;
}

std::vector<CpuIsa> runnable_isas() {
  std::vector<CpuIsa> out;
  for (int i = 0; i <= static_cast<int>(detected_isa()); ++i) out.push_back(static_cast<CpuIsa>(i));
  return out;
}

CpuIsa active_isa() {
  static const CpuIsa chosen = [] {
    const CpuIsa best = detected_isa();
    const char* env = std::getenv("VKSTREAM_CPU_ISA");
    if (env == nullptr || *env == '\0') return best;
    const std::optional<CpuIsa> wanted = isa_from_name(env);
    if (!wanted) return best;  // an unknown name changes nothing
    return static_cast<int>(*wanted) < static_cast<int>(best) ? *wanted : best;
  }();
  return chosen;
}

}  // namespace vks::cpuq
