#include "engine/cpu/quant/act_quant.h"

#include <cmath>
#include <cstring>

namespace vks::cpuq {
namespace {

// Nearest integer, ties to even, for |v| < 2^22 (ggml's nearest_int): adding 1.5 * 2^23 leaves the
// rounded integer in the mantissa. Inline where std::nearbyint is a library call.
int round_nearest(float v) {
  const float t = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &t, 4);
  return (bits & 0x007FFFFF) - 0x00400000;
}

// Quantizes n floats with one scale; returns d. NaN becomes 0 (and a non-finite amax gives
// scale 0 to the finite values), so no value is ever out of [-127, 127].
float quantize_run(const float* x, int8_t* q, size_t n) {
  float amax = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    amax = a > amax ? a : amax;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 127.0f / amax : 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i] * id;
    int r = 0;
    if (v == v) r = v >= 127.0f ? 127 : v <= -127.0f ? -127 : round_nearest(v);
    q[i] = static_cast<int8_t>(r);
  }
  return d;
}

}  // namespace

void quantize_act_q8x32(const float* x, ActQ8x32* out, size_t n_blocks) {
  for (size_t b = 0; b < n_blocks; ++b) {
    ActQ8x32& blk = out[b];
    blk.d = quantize_run(x + b * 32, blk.qs, 32);
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) sum += blk.qs[i];
    finish_act_q8x32(blk, sum);
  }
}

void finish_act_q8x32(ActQ8x32& blk, int32_t sum) {
  blk.dv[0] = blk.dv[1] = blk.dv[2] = blk.dv[3] = blk.d;
  blk.sum = sum;
  blk.neg_c8[0] = -8 * sum;
  blk.neg_c8[1] = blk.neg_c8[2] = blk.neg_c8[3] = 0;
  blk.s = blk.d * static_cast<float>(sum);
  blk.pad = 0;
}

void quantize_act_q8x256(const float* x, ActQ8x256* out, size_t n_blocks) {
  for (size_t b = 0; b < n_blocks; ++b) {
    ActQ8x256& blk = out[b];
    blk.d = quantize_run(x + b * 256, blk.qs, 256);
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += blk.qs[16 * j + i];
      blk.bsums[j] = static_cast<int16_t>(sum);
    }
    blk.pad[0] = blk.pad[1] = blk.pad[2] = 0;
  }
}

}  // namespace vks::cpuq
