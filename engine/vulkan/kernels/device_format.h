#pragma once
// The device side of the table of weight formats: for every ggml type the Vulkan kernels can run,
// one row saying how its rows are laid out on the device, which kernels read it and how a ggml row
// is converted at upload. Everything in device_matrix.cpp and ops.cpp derives from these rows;
// adding a type = one row here + its decode in shaders/weight_blocks.glsl (and, blocked, its int8
// form in shaders/weight_int8.glsl) + its .comp files (matvec_<suffix>, matmul_<suffix>,
// matlanes_<suffix>, embed_<suffix>, blocked: matdot_<suffix>) + its tests.
//
// Device layout of rows [first, first + n) of one part (a DeviceMatrix part buffer):
//   float formats (F32, F16; BF16 is converted to F32):
//     element [n][round_up(cols, 8)], zero padded; row_stride counts elements.
//   blocked formats (every quantized type):
//     quant plane at byte 0:   [n][cols / 32][quant_bytes_per_32]   row_stride = cols/32*quant_bytes_per_32/4 uints
//     side plane at uint d_offset (= n * quant row bytes / 4, a multiple of 4 uints):
//                              [n][ceil(cols / 256)][side_uvec4 * 16 bytes]
//     The quant plane holds one "group" of 32 weights per quant_bytes_per_32 (16: 4-bit values in
//     ggml's Q4_0 nibble order, element e < 16 in the low nibble of byte e, e >= 16 in the high
//     nibble of byte e - 16; 32: one int8 per element). The side plane holds, per 256 weights
//     (8 groups: what the kernels load with a few 16-byte loads), the scales, minimums and extra
//     high bits of those groups, in a per-type record described next to convert_row in
//     device_format.cpp and mirrored by load_side() in shaders/weight_blocks.glsl.
#include <cstdint>
#include <span>
#include <string>

#include "engine/gguf/ggml_type.h"

namespace vks::vk {

// What a kernel does with a weight matrix (an index into a format's pipeline cache slots).
// kLanes is the GPU family's one kernel for both matrix ops (Ops' MatmulFamily::kLanes); kDot the
// int8 dot-product family's (MatmulFamily::kDot: matdot_<suffix>, blocked formats only).
enum class WeightOp : uint32_t { kMatvec = 0, kMatmul = 1, kEmbed = 2, kLanes = 3, kDot = 4 };
inline constexpr uint32_t kWeightOpCount = 5;

struct DeviceFormat {
  GgmlType source;                 // ggml type of the tensor in the file
  const char* suffix;              // kernels matvec_, matmul_, embed_, matlanes_ and matdot_<suffix>
  uint32_t kernel_slot;            // dense index shared by formats using the same kernels (BF16 -> F32)
  uint32_t block;                  // cols must be a multiple of this (1 for float formats)
  uint32_t float_bytes;            // float formats: bytes per stored element; 0 for blocked formats
  uint32_t quant_bytes_per_32;     // blocked formats: quant plane bytes per 32 weights
  uint32_t side_uvec4;             // blocked formats: side plane 16-byte units per 256 weights
  // Rows per invocation of the rows family: VKS_ROW_SLOTS_<SUFFIX> (shader_params.h), which
  // matvec_/matmul_<suffix>.comp use as ROW_SLOTS; a workgroup covers VKS_ROWS_LOCAL_SIZE *
  // row_slots rows.
  uint32_t row_slots;
  // Converts one row of `cols` weights from ggml layout into its quant-plane row and side-plane
  // row (both zero-initialised by the caller; side is null for float formats).
  void (*convert_row)(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side);

  bool blocked() const { return float_bytes == 0; }
  uint32_t rows_per_group() const;  // rows family: rows one workgroup covers
  std::string kernel_name(WeightOp op) const;
};

// The format for a ggml type, or nullptr when the Vulkan kernels cannot run it.
const DeviceFormat* find_device_format(GgmlType source);
// Every row of the table (tests iterate it); kernel slots are < device_kernel_slot_count().
std::span<const DeviceFormat> device_formats();
uint32_t device_kernel_slot_count();
// "f32, f16, bf16, q8_0, ..." for error messages.
std::string supported_device_type_names();

// Layout arithmetic of the table above (cols must be a multiple of f.block).
uint64_t device_quant_row_bytes(const DeviceFormat& f, uint64_t cols);  // float formats: the padded row
uint64_t device_side_row_bytes(const DeviceFormat& f, uint64_t cols);   // 0 for float formats
uint32_t device_row_stride(const DeviceFormat& f, uint64_t cols);       // elements or uints (see above)

}  // namespace vks::vk
