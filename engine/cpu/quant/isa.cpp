#include "engine/cpu/quant/isa.h"

#include <cstdint>
#include <cstdlib>

namespace vks::cpuq {

std::string_view isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx: return "avx";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512Vnni: return "avx512vnni";
  }
  return "scalar";
}

std::optional<CpuIsa> isa_from_name(std::string_view name) {
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx, CpuIsa::kAvx2, CpuIsa::kAvx512Vnni}) {
    if (isa_name(isa) == name) return isa;
  }
  return std::nullopt;
}

#if defined(__x86_64__) || defined(__i386__)
namespace {

// Whether the OS saves the AVX-512 state (XCR0: SSE and AVX bits 1-2, opmask and ZMM bits 5-7) on
// a context switch: the CPU may have AVX-512 while the kernel leaves it off.
bool os_saves_zmm_state() {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(1), "c"(0));
  if ((ecx & (1u << 27)) == 0) return false;  // no OSXSAVE: xgetbv would fault
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  constexpr uint32_t kNeeded = 0x6u | 0xE0u;
  return (xcr0_lo & kNeeded) == kNeeded;
}

}  // namespace
#endif

namespace {

CpuIsa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx = __builtin_cpu_supports("avx") && __builtin_cpu_supports("ssse3") &&
                   __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("f16c");
  const bool avx2 = avx && __builtin_cpu_supports("avx2");
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") && os_saves_zmm_state()) {
    return CpuIsa::kAvx512Vnni;
  }
  if (avx2) return CpuIsa::kAvx2;
  if (avx) return CpuIsa::kAvx;
#endif
  return CpuIsa::kScalar;
}

}  // namespace

// Detected once: qmatmul asks on every call (several times per layer of every step), and
// cpuid/xgetbv trap to the hypervisor in a virtual machine.
CpuIsa detected_isa() {
  static const CpuIsa detected = detect();
  return detected;
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
