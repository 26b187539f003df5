#include "engine/vulkan/kernels/device_matrix.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/common/error.h"

namespace vks::vk {
namespace {

const DeviceFormat& checked_format(GgmlType t, uint64_t rows, uint64_t cols) {
  if (rows == 0 || cols == 0) throw Error(ErrorCode::kInvalidArgument, "upload_matrix: empty matrix");
  const DeviceFormat* f = find_device_format(t);
  if (f == nullptr) {
    throw Error(ErrorCode::kUnsupported, "the Vulkan kernels do not support tensor type " +
                                             std::string(ggml_type_name(t)) + " (supported: " +
                                             supported_device_type_names() + ")");
  }
  if (cols % f->block != 0) {
    throw Error(ErrorCode::kInvalidArgument, "upload_matrix: " + std::string(ggml_type_name(t)) + " row of " +
                                                 std::to_string(cols) + " elements is not a multiple of " +
                                                 std::to_string(f->block));
  }
  return *f;
}

// Source row r of the stacked sources (each src_row bytes a row).
const uint8_t* source_row(std::span<const StackedSource> sources, uint64_t src_row, uint64_t r) {
  for (const StackedSource& s : sources) {
    if (r < s.rows) return static_cast<const uint8_t*>(s.data) + r * src_row;
    r -= s.rows;
  }
  throw Error(ErrorCode::kInternal, "upload_matrix: row past the stacked sources");
}

// Converts rows first..first+n from ggml layout into the device layout of one part, at out
// (n * (quant row + side row) bytes, padding zeroed). With a pool, row ranges convert on its
// threads: on a CPU device most of the time is the first touch of the destination's pages, which
// the kernel serves per thread.
void convert_rows(const DeviceFormat& f, uint64_t cols, std::span<const StackedSource> sources, uint64_t first,
                  uint64_t n, uint8_t* out, ThreadPool* pool) {
  const uint64_t src_row = ggml_row_size(f.source, cols);
  const uint64_t qrow = device_quant_row_bytes(f, cols);
  const uint64_t srow = device_side_row_bytes(f, cols);
  uint8_t* side = out + n * qrow;
  auto convert = [&](uint64_t begin, uint64_t end) {
    std::memset(out + begin * qrow, 0, (end - begin) * qrow);
    if (srow > 0) std::memset(side + begin * srow, 0, (end - begin) * srow);
    for (uint64_t r = begin; r < end; ++r) {
      f.convert_row(source_row(sources, src_row, first + r), cols, out + r * qrow, f.blocked() ? side + r * srow : nullptr);
    }
  };
  constexpr uint64_t kChunkBytes = 1 << 20;  // below this a part converts on the caller alone
  const uint64_t bytes = n * (qrow + srow);
  if (pool == nullptr || pool->size() == 1 || bytes < 2 * kChunkBytes) {
    convert(0, n);
    return;
  }
  const uint64_t chunk_rows = std::max<uint64_t>(1, kChunkBytes / (qrow + srow));
  pool->parallel_for(static_cast<size_t>((n + chunk_rows - 1) / chunk_rows), [&](size_t i) {
    const uint64_t begin = i * chunk_rows;
    convert(begin, std::min(n, begin + chunk_rows));
  });
}

}  // namespace

const char* kernel_type_suffix(GgmlType type) {
  const DeviceFormat* f = find_device_format(type);
  return f != nullptr ? f->suffix : "unsupported";
}

uint64_t device_matrix_part_bytes(GgmlType type, uint64_t rows, uint64_t cols) {
  const DeviceFormat* f = find_device_format(type);
  return f != nullptr ? rows * (device_quant_row_bytes(*f, cols) + device_side_row_bytes(*f, cols)) : 0;
}

DeviceMatrix upload_matrix(const Device& device, GgmlType type, uint64_t rows, uint64_t cols, const void* ggml_data,
                           uint64_t max_part_bytes, ThreadPool* pool) {
  const StackedSource whole{ggml_data, rows};
  return upload_stacked_matrix(device, type, cols, std::span(&whole, 1), max_part_bytes, pool);
}

DeviceMatrix upload_stacked_matrix(const Device& device, GgmlType type, uint64_t cols,
                                   std::span<const StackedSource> sources, uint64_t max_part_bytes, ThreadPool* pool) {
  uint64_t rows = 0;
  for (const StackedSource& s : sources) rows += s.rows;
  const DeviceFormat& f = checked_format(type, rows, cols);
  // Every part is read whole through its texel view.
  const uint64_t limit = max_part_bytes == 0 ? device.max_texel_binding_bytes()
                                             : std::min(max_part_bytes, device.max_texel_binding_bytes());
  // Rows per part: the largest count whose device layout fits the binding limit (the layout is
  // linear in rows).
  const uint64_t per_row = device_matrix_part_bytes(type, 1, cols);
  if (per_row > limit) {
    throw Error(ErrorCode::kInvalidArgument, "upload_matrix: one row of " + std::to_string(cols) +
                                                 " elements exceeds the storage-buffer binding limit");
  }
  const uint64_t rows_per_part = std::min(rows, limit / per_row);

  DeviceMatrix m;
  m.type = type;
  m.format = &f;
  m.rows = rows;
  m.cols = cols;
  m.row_stride = device_row_stride(f, cols);
  m.storage.rows = rows;
  m.storage.row_bytes = per_row;
  m.storage.rows_per_part = rows_per_part;
  std::vector<uint8_t> staging;
  for (uint64_t first = 0; first < rows; first += rows_per_part) {
    const uint64_t n = std::min(rows_per_part, rows - first);
    Buffer part = device.create_buffer(n * per_row, BufferKind::kStorage);
    if (part.host_visible() && device.info().type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
      // Straight into the mapped memory, plain RAM on a CPU device: a host copy first touched every
      // byte of the model twice more, and first touches (page faults) were most of the weights'
      // 10-14 s at a 1B model's start (issue 37). A GPU's mapped memory may be write-combined or
      // across the bus, where the converters' scattered small writes would be slow: staging there.
      convert_rows(f, cols, sources, first, n, static_cast<uint8_t*>(part.mapped()), pool);
      device.flush(part);
    } else {
      staging.resize(n * per_row);
      convert_rows(f, cols, sources, first, n, staging.data(), pool);
      device.upload(part, 0, staging.data(), staging.size());
    }
    m.storage.parts.push_back(std::move(part));
    m.d_offset.push_back(static_cast<uint32_t>(f.blocked() ? n * device_quant_row_bytes(f, cols) / 4 : 0));
  }
  return m;
}

DeviceMatrix upload_matrix(const Device& device, const TensorRef& tensor, uint64_t max_part_bytes, ThreadPool* pool) {
  if (tensor.data == nullptr) throw Error(ErrorCode::kInvalidArgument, "upload_matrix: tensor " + tensor.name + " has no data");
  try {
    return upload_matrix(device, tensor.type, tensor.rows, tensor.cols, tensor.data, max_part_bytes, pool);
  } catch (const Error& e) {
    throw Error(e.code(), "tensor " + tensor.name + ": " + e.what());
  }
}

Buffer upload_vector_f32(const Device& device, const TensorRef& tensor) {
  const uint64_t n = tensor.rows * tensor.cols;
  // Zero-padded to whole 16-byte texels: its texel view (read by the lanes kernels' RMSNorm
  // prologue) covers whole texels only.
  std::vector<float> values((n + 3) / 4 * 4, 0.0f);
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
  Buffer b = device.create_buffer(values.size() * sizeof(float), BufferKind::kStorage);
  device.upload(b, 0, values.data(), values.size() * sizeof(float));
  return b;
}

}  // namespace vks::vk
