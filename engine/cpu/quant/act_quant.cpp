#include "engine/cpu/quant/act_quant.h"

#include <cmath>

namespace vks::cpuq {
namespace {

// Quantizes n floats with one scale; returns d. NaN activations become 0 (the cast of NaN to int
// would be undefined) and the scale stays whatever amax gives.
float quantize_run(const float* x, int8_t* q, size_t n) {
  float amax = 0.0f;
  for (size_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 127.0f / amax : 0.0f;
  for (size_t i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] * id);
    if (!(v == v)) v = 0.0f;
    v = std::fmin(127.0f, std::fmax(-127.0f, v));
    q[i] = static_cast<int8_t>(v);
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
    blk.sum = sum;
    blk.s = blk.d * static_cast<float>(sum);
    blk.pad = 0;
  }
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
