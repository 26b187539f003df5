#include "engine/vulkan/kernels/device_format.h"

#include <cstring>

namespace vks::vk {
namespace {

uint64_t round_up(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }

// ---- float formats: the row as stored (BF16 widened to F32) ----

void convert_f32(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t*) { std::memcpy(quants, src, cols * 4); }
void convert_f16(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t*) { std::memcpy(quants, src, cols * 2); }
void convert_bf16(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t*) {
  for (uint64_t c = 0; c < cols; ++c) {
    uint16_t h;
    std::memcpy(&h, src + 2 * c, 2);
    const float f = bf16_to_fp32(h);
    std::memcpy(quants + 4 * c, &f, 4);
  }
}

// ---- blocked formats ----
// Q8_0 side record (1 uvec4 per 256): the 8 blocks' f16 scales d. Quants: the 32 int8 as stored.
void convert_q8_0(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t b = 0; b < cols / 32; ++b) {
    const uint8_t* blk = src + b * sizeof(BlockQ8_0);
    std::memcpy(side + 2 * b, blk, 2);
    std::memcpy(quants + 32 * b, blk + 2, 32);
  }
}

// Q4_0 side record (1 uvec4 per 256): the 8 blocks' f16 scales d. Quants: ggml's nibbles XOR 0x88,
// so a nibble read as a signed 4-bit value is q - 8 (no subtraction in the kernel).
void convert_q4_0(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t b = 0; b < cols / 32; ++b) {
    const uint8_t* blk = src + b * sizeof(BlockQ4_0);
    std::memcpy(side + 2 * b, blk, 2);
    for (int i = 0; i < 16; ++i) quants[16 * b + i] = static_cast<uint8_t>(blk[2 + i] ^ 0x88);
  }
}

// Kernel slots: F32 and BF16 share the f32 kernels.
const DeviceFormat kFormats[] = {
    {GgmlType::kF32, "f32", 0, 1, 4, 0, 0, convert_f32},
    {GgmlType::kBF16, "f32", 0, 1, 4, 0, 0, convert_bf16},
    {GgmlType::kF16, "f16", 1, 1, 2, 0, 0, convert_f16},
    {GgmlType::kQ8_0, "q8_0", 2, 32, 0, 32, 1, convert_q8_0},
    {GgmlType::kQ4_0, "q4_0", 3, 32, 0, 16, 1, convert_q4_0},
};
constexpr uint32_t kSlotCount = 4;

}  // namespace

std::string DeviceFormat::kernel_name(WeightOp op) const {
  static const char* const kOps[kWeightOpCount] = {"matvec_", "matmul_", "embed_"};
  return std::string(kOps[static_cast<uint32_t>(op)]) + suffix;
}

const DeviceFormat* find_device_format(GgmlType source) {
  for (const DeviceFormat& f : kFormats) {
    if (f.source == source) return &f;
  }
  return nullptr;
}

std::span<const DeviceFormat> device_formats() { return kFormats; }
uint32_t device_kernel_slot_count() { return kSlotCount; }

std::string supported_device_type_names() {
  std::string names;
  for (const DeviceFormat& f : kFormats) {
    if (!names.empty()) names += ", ";
    names += ggml_type_name(f.source);
  }
  return names;
}

uint64_t device_quant_row_bytes(const DeviceFormat& f, uint64_t cols) {
  return f.blocked() ? cols / 32 * f.quant_bytes_per_32 : round_up(cols, 8) * f.float_bytes;
}

uint64_t device_side_row_bytes(const DeviceFormat& f, uint64_t cols) {
  return f.blocked() ? (cols + 255) / 256 * f.side_uvec4 * 16 : 0;
}

uint32_t device_row_stride(const DeviceFormat& f, uint64_t cols) {
  return static_cast<uint32_t>(f.blocked() ? device_quant_row_bytes(f, cols) / 4 : round_up(cols, 8));
}

}  // namespace vks::vk
