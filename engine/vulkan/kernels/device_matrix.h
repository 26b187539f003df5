#pragma once
// Weights on the device in the layout the matvec/matmul/matlanes/embed kernels read, split into row ranges
// that each fit one storage-buffer binding.
//
// Layout of every part (rows [first_row, first_row + part_rows) of the matrix): see
// engine/vulkan/kernels/device_format.h, the one table of device weight formats.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/gguf/ggml_type.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/buffer.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/kernels/device_format.h"

namespace vks::vk {

struct DeviceMatrix {
  GgmlType type = GgmlType::kF32;   // ggml type of the source tensor
  // Resolved once at upload: layout and kernels (Ops caches the pipelines by format->kernel_slot,
  // so no dispatch looks a kernel up by name).
  const DeviceFormat* format = nullptr;
  uint64_t rows = 0;
  uint64_t cols = 0;
  uint32_t row_stride = 0;          // in the storage unit above
  std::vector<uint32_t> d_offset;   // per part: uint index of the scale plane (quantized types)
  SplitBuffer storage;              // row ranges; storage.part_rows(i) rows in part i
};

// Bytes of the device layout for `rows` rows (what one part of that many rows occupies).
uint64_t device_matrix_part_bytes(GgmlType type, uint64_t rows, uint64_t cols);

// Uploads a matrix given in ggml layout (rows x cols, each row ggml_row_size bytes). Types: the
// rows of device_format.cpp; cols must be a multiple of the block size. max_part_bytes = 0:
// the device's binding limit. pool: converts large parts' rows on its threads (null: the caller).
// Throws vks::Error(kUnsupported/kInvalidArgument).
DeviceMatrix upload_matrix(const Device& device, GgmlType type, uint64_t rows, uint64_t cols,
                           const void* ggml_data, uint64_t max_part_bytes = 0, ThreadPool* pool = nullptr);
DeviceMatrix upload_matrix(const Device& device, const TensorRef& tensor, uint64_t max_part_bytes = 0,
                           ThreadPool* pool = nullptr);

// Rows of several ggml matrices of one type and width, stacked in order (Q|K|V, gate|up).
struct StackedSource {
  const void* data;
  uint64_t rows;
};
// One device matrix of the stacked rows, converted from the sources in place (no stacked host copy).
DeviceMatrix upload_stacked_matrix(const Device& device, GgmlType type, uint64_t cols,
                                   std::span<const StackedSource> sources, uint64_t max_part_bytes = 0,
                                   ThreadPool* pool = nullptr);

// A vector tensor (norm weights) as floats in a storage buffer (F32/F16/BF16 converted to F32).
// Zero-padded to a multiple of 4 floats.
Buffer upload_vector_f32(const Device& device, const TensorRef& tensor);

// Kernel name suffix for a weight type ("f32" for f32 and bf16, "q4_k", ...; "unsupported").
const char* kernel_type_suffix(GgmlType type);

}  // namespace vks::vk
