#pragma once
// MXFP4's values: the 16 E2M1 codes and the E8M0 block scale, as ggml decodes them. Shared by the
// reference conversions (quant_mxfp4.cpp) and the CPU backend's integer kernels (engine/cpu/quant).
// Internal linkage on purpose: those kernels' files are compiled for different ISA targets, and the
// one copy of an inline function the linker keeps could carry another target's instructions
// (engine/cpu/quant/kernels.h).
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace vks::mxfp4 {

// The 16 E2M1 codes' values doubled, so that they are integers (ggml's kvalues_mxfp4). Code 8 is
// -0, stored as 0 so that it dequantizes to +0 as ggml's does.
alignas(16) static constexpr int8_t kDoubledE2M1[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
// The same plus kBias, unsigned (0..24): what a u8 x s8 product (maddubs, vpdpbusd) takes; the
// kernels subtract kBias times the activations' sum.
inline constexpr int kBias = 12;
alignas(16) static constexpr std::array<uint8_t, 16> kBiasedE2M1 = [] {
  std::array<uint8_t, 16> v{};
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(kDoubledE2M1[i] + kBias);
  return v;
}();

// 2^(e - 128): half the E8M0 scale, for the doubled values (ggml's ggml_e8m0_to_fp32_half). Exact
// for every byte: e = 0 and 1 are the subnormals 2^-128 and 2^-127, and e = 255 (NaN in the OCP
// format) is 2^127 as in ggml.
static inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  return std::bit_cast<float>(bits);
}

}  // namespace vks::mxfp4
