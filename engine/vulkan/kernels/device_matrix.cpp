#include "engine/vulkan/kernels/device_matrix.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/common/error.h"

namespace vks::vk {
namespace {

constexpr uint64_t kQuantBlock = 32;

uint64_t round_up(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }

GgmlType kernel_type(GgmlType t) { return t == GgmlType::kBF16 ? GgmlType::kF32 : t; }

// Bytes of the quant plane of one row and of the scale plane of one row.
uint64_t quant_row_bytes(GgmlType t, uint64_t cols) {
  return t == GgmlType::kQ8_0 ? cols : cols / 2;
}

uint64_t row_stride_units(GgmlType t, uint64_t cols) {
  switch (t) {
    case GgmlType::kF32:
    case GgmlType::kF16: return round_up(cols, 8);
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0: return quant_row_bytes(t, cols) / 4;
    default: return 0;
  }
}

uint64_t quant_plane_bytes(GgmlType t, uint64_t rows, uint64_t cols) { return rows * quant_row_bytes(t, cols); }

// f16 scales per row of the scale plane: blocks rounded up to 8, so a row's scales of blocks
// 8s .. 8s+7 are one aligned 16-byte load for the matvec kernels.
uint64_t scale_row_halves(uint64_t cols) { return round_up(cols / kQuantBlock, 8); }

void check_type(GgmlType t, uint64_t rows, uint64_t cols) {
  if (rows == 0 || cols == 0) throw Error(ErrorCode::kInvalidArgument, "upload_matrix: empty matrix");
  switch (t) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16: return;
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
      if (cols % kQuantBlock != 0) {
        throw Error(ErrorCode::kInvalidArgument, "upload_matrix: " + std::string(ggml_type_name(t)) + " row of " +
                                                     std::to_string(cols) + " elements is not a multiple of 32");
      }
      return;
    default:
      throw Error(ErrorCode::kUnsupported,
                  "the Vulkan kernels do not support tensor type " + std::string(ggml_type_name(t)) +
                      " (supported: f32, f16, bf16, q8_0, q4_0)");
  }
}

// Converts rows [first, first + n) from ggml layout into the device layout of one part.
void convert_rows(GgmlType src_type, uint64_t cols, const uint8_t* src, uint64_t n, std::vector<uint8_t>& out) {
  const GgmlType t = kernel_type(src_type);
  const uint64_t src_row = ggml_row_size(src_type, cols);
  out.assign(device_matrix_part_bytes(t, n, cols), 0);
  if (t == GgmlType::kF32 || t == GgmlType::kF16) {
    const uint64_t elem = t == GgmlType::kF32 ? 4 : 2;
    const uint64_t stride = row_stride_units(t, cols) * elem;
    for (uint64_t r = 0; r < n; ++r) {
      const uint8_t* s = src + r * src_row;
      uint8_t* d = out.data() + r * stride;
      if (src_type == GgmlType::kBF16) {
        for (uint64_t c = 0; c < cols; ++c) {
          uint16_t h;
          std::memcpy(&h, s + 2 * c, 2);
          const float f = bf16_to_fp32(h);
          std::memcpy(d + 4 * c, &f, 4);
        }
      } else {
        std::memcpy(d, s, cols * elem);
      }
    }
    return;
  }
  const uint64_t nb = cols / kQuantBlock;
  const uint64_t srow = scale_row_halves(cols);
  const uint64_t qrow = quant_row_bytes(t, cols);
  uint8_t* quants = out.data();
  uint8_t* scales = out.data() + quant_plane_bytes(t, n, cols);
  for (uint64_t r = 0; r < n; ++r) {
    const uint8_t* s = src + r * src_row;
    for (uint64_t b = 0; b < nb; ++b) {
      if (t == GgmlType::kQ8_0) {
        const uint8_t* blk = s + b * sizeof(BlockQ8_0);
        std::memcpy(scales + 2 * (r * srow + b), blk, 2);
        std::memcpy(quants + r * qrow + b * 32, blk + 2, 32);
      } else {
        const uint8_t* blk = s + b * sizeof(BlockQ4_0);
        std::memcpy(scales + 2 * (r * srow + b), blk, 2);
        uint8_t* q = quants + r * qrow + b * 16;
        // XOR 0x88: each nibble becomes the two's-complement 4-bit value q - 8.
        for (int i = 0; i < 16; ++i) q[i] = static_cast<uint8_t>(blk[2 + i] ^ 0x88);
      }
    }
  }
}

}  // namespace

const char* kernel_type_suffix(GgmlType type) {
  switch (kernel_type(type)) {
    case GgmlType::kF32: return "f32";
    case GgmlType::kF16: return "f16";
    case GgmlType::kQ8_0: return "q8_0";
    case GgmlType::kQ4_0: return "q4_0";
    default: return "unsupported";
  }
}

uint64_t device_matrix_part_bytes(GgmlType type, uint64_t rows, uint64_t cols) {
  const GgmlType t = kernel_type(type);
  switch (t) {
    case GgmlType::kF32: return rows * row_stride_units(t, cols) * 4;
    case GgmlType::kF16: return rows * row_stride_units(t, cols) * 2;
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0: return quant_plane_bytes(t, rows, cols) + rows * scale_row_halves(cols) * 2;
    default: return 0;
  }
}

DeviceMatrix upload_matrix(const Device& device, GgmlType type, uint64_t rows, uint64_t cols, const void* ggml_data,
                           uint64_t max_part_bytes) {
  check_type(type, rows, cols);
  const GgmlType t = kernel_type(type);
  const uint64_t limit = max_part_bytes == 0 ? device.max_binding_bytes()
                                             : std::min(max_part_bytes, device.max_binding_bytes());
  // Rows per part: the largest count whose device layout fits the binding limit.
  const uint64_t per_row = device_matrix_part_bytes(t, 1, cols);
  const uint64_t dense_row = (t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0)
                                 ? quant_row_bytes(t, cols) + 2 * scale_row_halves(cols)
                                 : per_row;
  uint64_t rows_per_part = std::max<uint64_t>(1, limit / dense_row);
  while (rows_per_part > 1 && device_matrix_part_bytes(t, rows_per_part, cols) > limit) --rows_per_part;
  while (rows_per_part < rows && device_matrix_part_bytes(t, rows_per_part + 1, cols) <= limit) ++rows_per_part;
  if (device_matrix_part_bytes(t, rows_per_part, cols) > limit) {
    throw Error(ErrorCode::kInvalidArgument, "upload_matrix: one row of " + std::to_string(cols) +
                                                 " elements exceeds the storage-buffer binding limit");
  }
  rows_per_part = std::min(rows_per_part, rows);

  DeviceMatrix m;
  m.type = t;
  m.rows = rows;
  m.cols = cols;
  m.row_stride = static_cast<uint32_t>(row_stride_units(t, cols));
  m.storage.rows = rows;
  m.storage.row_bytes = per_row;
  m.storage.rows_per_part = rows_per_part;
  const auto* src = static_cast<const uint8_t*>(ggml_data);
  const uint64_t src_row = ggml_row_size(type, cols);
  std::vector<uint8_t> staging;
  for (uint64_t first = 0; first < rows; first += rows_per_part) {
    const uint64_t n = std::min(rows_per_part, rows - first);
    convert_rows(type, cols, src + first * src_row, n, staging);
    Buffer part = device.create_buffer(staging.size(), BufferKind::kStorage);
    device.upload(part, 0, staging.data(), staging.size());
    m.storage.parts.push_back(std::move(part));
    m.d_offset.push_back(static_cast<uint32_t>(
        (t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0) ? quant_plane_bytes(t, n, cols) / 4 : 0));
  }
  return m;
}

DeviceMatrix upload_matrix(const Device& device, const TensorRef& tensor, uint64_t max_part_bytes) {
  if (tensor.data == nullptr) throw Error(ErrorCode::kInvalidArgument, "upload_matrix: tensor " + tensor.name + " has no data");
  try {
    return upload_matrix(device, tensor.type, tensor.rows, tensor.cols, tensor.data, max_part_bytes);
  } catch (const Error& e) {
    throw Error(e.code(), "tensor " + tensor.name + ": " + e.what());
  }
}

Buffer upload_vector_f32(const Device& device, const TensorRef& tensor) {
  const uint64_t n = tensor.rows * tensor.cols;
  std::vector<float> values(n);
  switch (tensor.type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
      dequantize_row(tensor.type, tensor.data, values.data(), n);
      break;
    default:
      throw Error(ErrorCode::kUnsupported, "tensor " + tensor.name + ": vector of type " +
                                               std::string(ggml_type_name(tensor.type)) + " (expected f32/f16/bf16)");
  }
  Buffer b = device.create_buffer(n * sizeof(float), BufferKind::kStorage);
  device.upload(b, 0, values.data(), n * sizeof(float));
  return b;
}

}  // namespace vks::vk
