#pragma once
// The instruction-set levels the quantized CPU kernels are compiled for, and the one this process
// uses. One binary carries every level of its architecture (each in its own source file compiled
// for its target); the level is chosen once, from the CPU's features, lowered by VKSTREAM_CPU_ISA
// when that is set.
// Every level computes the same bits (see docs/ARCHITECTURE.md, "CPU kernels"), except the
// avx512vnni and amx levels' Q4_0 and Q8_0 ("block sums") and the amx level's Q4_K ("K-block sums"),
// families of their own (kernels.h).
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace vks::cpuq {

enum class CpuIsa {
  kScalar = 0,  // plain C++: any CPU
  kAvx = 1,     // 128-bit integer dot products (SSSE3 maddubs) with AVX encoding and F16C
  kAvx2 = 2,    // 256-bit integer dot products (AVX2, F16C)
  kAvx512Vnni = 3,  // 512-bit vpdpbusd (AVX-512 F/BW/VL + VNNI); Q4_0/Q8_0 under block sums
  kAmx = 4,         // AMX-TILE + AMX-INT8 tiles for Q4_0/Q8_0 (block sums); avx512vnni's other kernels
  // aarch64: 128-bit NEON with the dot-product extension (SDOT, ARMv8.2 dotprod; HWCAP_ASIMDDP), in
  // the lane convention (the scalar level's bits).
  kNeonDot = 5,
};

// This architecture's levels, lowest first (x86: scalar, avx, avx2, avx512vnni, amx; aarch64:
// scalar, neondot; others: scalar). A level is "lower" than another when it comes before it here.
const std::vector<CpuIsa>& architecture_isas();

std::string_view isa_name(CpuIsa isa);
// "scalar", "avx", "avx2", "avx512vnni", "amx", "neondot" (case-sensitive); nullopt otherwise (also
// for another architecture's level's name).
std::optional<CpuIsa> isa_from_name(std::string_view name);
// The highest level this CPU executes.
CpuIsa detected_isa();
// Every level this CPU executes, lowest first (what tests compare).
std::vector<CpuIsa> runnable_isas();
// isa's place in architecture_isas() (0, scalar's, for another architecture's level).
size_t isa_position(CpuIsa isa);
// Whether isa comes no later than `than` in architecture_isas().
bool isa_at_most(CpuIsa isa, CpuIsa than);
// The level qmatmul uses: detected_isa(), or VKSTREAM_CPU_ISA when it names a level this CPU
// executes (a higher one than the CPU has is lowered to detected_isa()). Read once per process.
// amx is the default where the CPU has it (docs/ARCHITECTURE.md has its figures against
// avx512vnni: faster prefill and batched decode, decode at batch 1 about the same).
CpuIsa active_isa();

}  // namespace vks::cpuq
