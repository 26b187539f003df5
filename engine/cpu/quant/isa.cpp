#include "engine/cpu/quant/isa.h"

#include <cstdint>
#include <cstdlib>

#include <algorithm>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace vks::cpuq {

std::string_view isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx: return "avx";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512Vnni: return "avx512vnni";
    case CpuIsa::kAmx: return "amx";
    case CpuIsa::kNeonDot: return "neondot";
  }
  return "scalar";
}

const std::vector<CpuIsa>& architecture_isas() {
  static const std::vector<CpuIsa> levels = {
#if defined(__x86_64__) || defined(__i386__)
      CpuIsa::kScalar, CpuIsa::kAvx, CpuIsa::kAvx2, CpuIsa::kAvx512Vnni, CpuIsa::kAmx,
#elif defined(__aarch64__)
      CpuIsa::kScalar, CpuIsa::kNeonDot,
#else
      CpuIsa::kScalar,
#endif
  };
  return levels;
}

std::optional<CpuIsa> isa_from_name(std::string_view name) {
  for (CpuIsa isa : architecture_isas()) {
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

// AMX-TILE and AMX-INT8 (cpuid leaf 7, edx bits 24 and 25), the OS saving the tile state (XCR0 bits
// 17-18), and, on Linux, this process's permission to use the tile data, which the kernel grants on
// request (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA; without it the first tile instruction
// faults). The permission holds for the whole process, every thread; refused means no AMX.
bool amx_usable() {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0), "c"(0));
  if (eax < 7) return false;
  __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
  constexpr uint32_t kAmxTile = 1u << 24, kAmxInt8 = 1u << 25;
  if ((edx & (kAmxTile | kAmxInt8)) != (kAmxTile | kAmxInt8)) return false;
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));  // os_saves_zmm_state() checked OSXSAVE
  constexpr uint32_t kTileState = (1u << 17) | (1u << 18);
  if ((xcr0_lo & kTileState) != kTileState) return false;
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
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
    return amx_usable() ? CpuIsa::kAmx : CpuIsa::kAvx512Vnni;
  }
  if (avx2) return CpuIsa::kAvx2;
  if (avx) return CpuIsa::kAvx;
#elif defined(__aarch64__) && defined(__linux__)
  if ((getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0) return CpuIsa::kNeonDot;
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
  const std::vector<CpuIsa>& levels = architecture_isas();
  return {levels.begin(), levels.begin() + static_cast<std::ptrdiff_t>(isa_position(detected_isa())) + 1};
}

size_t isa_position(CpuIsa isa) {
  const std::vector<CpuIsa>& levels = architecture_isas();
  const auto at = std::find(levels.begin(), levels.end(), isa);
  return at == levels.end() ? 0 : static_cast<size_t>(at - levels.begin());
}

bool isa_at_most(CpuIsa isa, CpuIsa than) { return isa_position(isa) <= isa_position(than); }

CpuIsa active_isa() {
  static const CpuIsa chosen = [] {
    const CpuIsa best = detected_isa();
    const char* env = std::getenv("VKSTREAM_CPU_ISA");
    if (env == nullptr || *env == '\0') return best;
    const std::optional<CpuIsa> wanted = isa_from_name(env);
    if (!wanted) return best;  // an unknown name changes nothing
    return isa_at_most(*wanted, best) ? *wanted : best;
  }();
  return chosen;
}

}  // namespace vks::cpuq
