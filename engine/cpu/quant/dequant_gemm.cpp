// The float fallback of qmatmul (kernels.h): rows dequantized a chunk at a time into a stack
// buffer and dotted in ref::dot's order, so F32/F16/BF16 products equal ref::matmul's bits.
#include <cstddef>
#include <cstdint>

#include "engine/common/error.h"
#include "engine/cpu/quant/kernels.h"

namespace vks::cpuq {
namespace {

constexpr size_t kChunk = 256;  // floats dequantized at a time; a multiple of every block size and of 8
constexpr size_t kLanes = 8;
constexpr size_t kTile = 4;  // tokens sharing one dequantized chunk

float combine_lanes(const float* lane) {
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

}  // namespace

void gemm_dequantized(DequantizeFn dequantize, uint32_t block_size, uint32_t block_bytes, const uint8_t* w,
                      size_t w_stride, size_t n_rows, const float* x, size_t n_cols, size_t n_tokens, float* y,
                      size_t y_stride) {
  if (kChunk % block_size != 0) {
    throw Error(ErrorCode::kUnsupported, "qmatmul: block size " + std::to_string(block_size) + " does not divide 256");
  }
  float chunk[kChunk];
  const size_t body = n_cols - n_cols % kLanes;  // the rest is ref::dot's sequential tail
  for (size_t t0 = 0; t0 < n_tokens; t0 += kTile) {
    const size_t nt = n_tokens - t0 < kTile ? n_tokens - t0 : kTile;
    for (size_t r = 0; r < n_rows; ++r) {
      const uint8_t* row = w + r * w_stride;
      float lane[kTile][kLanes] = {};
      size_t c0 = 0;
      size_t n = 0;
      for (c0 = 0; c0 < n_cols; c0 += kChunk) {
        n = n_cols - c0 < kChunk ? n_cols - c0 : kChunk;
        dequantize(row + (c0 / block_size) * block_bytes, chunk, n / block_size);
        const size_t n_body = c0 + n <= body ? n : body - c0;  // c0 < body whenever a lane element remains
        for (size_t t = 0; t < nt; ++t) {
          const float* xt = x + (t0 + t) * n_cols + c0;
          for (size_t i = 0; i < n_body; i += kLanes) {
            for (size_t j = 0; j < kLanes; ++j) lane[t][j] += chunk[i + j] * xt[i + j];
          }
        }
      }
      // The tail lies in the last chunk, still in the buffer; c0 - kChunk is that chunk's start.
      const size_t last = c0 - kChunk;
      for (size_t t = 0; t < nt; ++t) {
        float sum = combine_lanes(lane[t]);
        const float* xt = x + (t0 + t) * n_cols;
        for (size_t i = body; i < n_cols; ++i) sum += chunk[i - last] * xt[i];
        y[(t0 + t) * y_stride + r] = sum;
      }
    }
  }
}

}  // namespace vks::cpuq
