#pragma once
// The 16 values of the non-linear 4-bit types IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl), shared by
// the reference conversions (quant_iq4.cpp) and the CPU backend's integer kernels (engine/cpu/quant).
// Internal linkage on purpose, as mxfp4_codes.h: those kernels' files are compiled for different
// ISA targets.
#include <array>
#include <cstddef>
#include <cstdint>

namespace vks::iq4 {

alignas(16) static constexpr int8_t kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                   1,    13,   25,  38,  53,  69,  89,  113};
// The same plus kBias, unsigned (1..241): what a u8 x s8 product with 32-bit accumulation
// (vpdpbusd) takes; the kernels subtract kBias times the activations' sum.
inline constexpr int kBias = 128;
alignas(16) static constexpr std::array<uint8_t, 16> kBiasedValues = [] {
  std::array<uint8_t, 16> v{};
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(kValues[i] + kBias);
  return v;
}();

}  // namespace vks::iq4
