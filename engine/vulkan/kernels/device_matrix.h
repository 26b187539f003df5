#pragma once
// Weights on the device in the layout the matvec/matmul/embed kernels read, split into row ranges
// that each fit one storage-buffer binding.
//
// Layout of every part (rows [first_row, first_row + part_rows) of the matrix):
//   F32:  float  [part_rows][row_stride]     row_stride = cols rounded up to 8 (zero padded)
//   F16:  half   [part_rows][row_stride]     row_stride = cols rounded up to 8 (zero padded);
//         row_stride in MatmulParams counts halves
//   Q8_0: quants int8 [part_rows][cols/32][32]            at byte 0 (row_stride = cols/4 uints)
//         scales f16  [part_rows][round_up(cols/32, 8)]   at uint index d_offset (zero padded)
//   Q4_0: quants      [part_rows][cols/32][16 bytes]      at byte 0 (row_stride = cols/8 uints),
//         each byte XOR 0x88 so a nibble is the two's-complement 4-bit value q - 8 (ggml's nibble
//         order: element j<16 low nibble of byte j, j>=16 high nibble of byte j-16)
//         scales f16  [part_rows][round_up(cols/32, 8)]   at uint index d_offset (zero padded)
// BF16 weights are converted to F32 at upload.
#include <cstdint>
#include <vector>

#include "engine/gguf/ggml_type.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/buffer.h"
#include "engine/vulkan/core/device.h"

namespace vks::vk {

struct DeviceMatrix {
  GgmlType type = GgmlType::kF32;   // kernel type: F32, F16, Q8_0 or Q4_0
  uint64_t rows = 0;
  uint64_t cols = 0;
  uint32_t row_stride = 0;          // in the storage unit above
  std::vector<uint32_t> d_offset;   // per part: uint index of the scale plane (quantized types)
  SplitBuffer storage;              // row ranges; storage.part_rows(i) rows in part i
};

// Bytes of the device layout for `rows` rows (what one part of that many rows occupies).
uint64_t device_matrix_part_bytes(GgmlType type, uint64_t rows, uint64_t cols);

// Uploads a matrix given in ggml layout (rows x cols, each row ggml_row_size bytes). Types F32,
// F16, BF16 (→F32), Q8_0, Q4_0; cols must be a multiple of the block size. max_part_bytes = 0:
// the device's binding limit. Throws vks::Error(kUnsupported/kInvalidArgument).
DeviceMatrix upload_matrix(const Device& device, GgmlType type, uint64_t rows, uint64_t cols,
                           const void* ggml_data, uint64_t max_part_bytes = 0);
DeviceMatrix upload_matrix(const Device& device, const TensorRef& tensor, uint64_t max_part_bytes = 0);

// A vector tensor (norm weights) as floats in a storage buffer (F32/F16/BF16 converted to F32).
Buffer upload_vector_f32(const Device& device, const TensorRef& tensor);

// Kernel name suffix for a weight type: "f32", "f16", "q8_0", "q4_0".
const char* kernel_type_suffix(GgmlType type);

}  // namespace vks::vk
