// Half-precision values to floats: unpackHalf2x16, or the same floats from integer steps on devices
// whose compiler gets unpackHalf2x16 wrong. Debian 12's arm64 lavapipe (LLVM 15) aborts on it
// ("Cannot select: v4f32 = truncate", "v4f32 = AArch64ISD::VLSHR") or returns wrong values (an F16
// embedding row came back 1.5e-10 for 0.0997). DeviceInfo::halves_by_integer_steps says which
// devices; Kernel::create gives every pipeline the constant, so the other branch folds away.
#ifndef VKS_HALVES_GLSL
#define VKS_HALVES_GLSL
#include "shader_params.h"

layout(constant_id = VKS_HALVES_CONSTANT_ID) const bool HALVES_BY_INTEGER_STEPS = false;

// The float of the IEEE half in h's low 16 bits, the value unpackHalf2x16 gives: subnormals as
// float(m) * 2^-24 (exact, and no float subnormal for a device to flush), infinities and NaNs with
// the exponent all ones.
float half_value(uint h) {
  const uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
  if (e == 0u) {
    const float v = float(m) * (1.0 / 16777216.0);
    return sign != 0u ? -v : v;
  }
  return uintBitsToFloat(sign | (e == 31u ? 0x7F800000u : (e + 112u) << 23) | (m << 13));
}

// The two halves of w, low bits first (unpackHalf2x16's order).
vec2 unpack_halves(uint w) {
  if (HALVES_BY_INTEGER_STEPS) return vec2(half_value(w), half_value(w >> 16));
  return unpackHalf2x16(w);
}

#endif  // VKS_HALVES_GLSL
