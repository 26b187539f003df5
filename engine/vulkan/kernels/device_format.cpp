#include "engine/vulkan/kernels/device_format.h"

#include <cstring>

#include "engine/vulkan/shaders/shader_params.h"

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

// Blocks of a half d and 16 nibble bytes (Q4_0, IQ4_NL). Side record (1 uvec4 per 256): the 8
// blocks' d. Quants: the nibble bytes XOR kFlip: Q4_0's with 0x88, so that a nibble read as a signed
// 4-bit value is q - 8 (no subtraction in the kernel); IQ4_NL's indices as stored (the kernel looks
// their values up).
template <uint8_t kFlip>
void convert_half_and_nibbles(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  static_assert(sizeof(BlockQ4_0) == sizeof(BlockIQ4_NL));
  for (uint64_t b = 0; b < cols / 32; ++b) {
    const uint8_t* blk = src + b * sizeof(BlockQ4_0);
    std::memcpy(side + 2 * b, blk, 2);
    for (int i = 0; i < 16; ++i) quants[16 * b + i] = static_cast<uint8_t>(blk[2 + i] ^ kFlip);
  }
}

// ---- 4-bit-plane formats: every weight's integer value as a nibble in Q4_0 order ----

void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// Writes 32 values (low 4 bits of each) as one 16-byte group: element e < 16 in the low nibble of
// byte e, e >= 16 in the high nibble of byte e - 16.
void pack_group(const int* v, uint8_t* group) {
  for (int e = 0; e < 16; ++e) group[e] = static_cast<uint8_t>((v[e] & 15) | ((v[e + 16] & 15) << 4));
}

// Q4_1 side record (2 uvec4 per 256): per block the uint d | m << 16 (halves). Quants: ggml's nibbles.
void convert_q4_1(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t b = 0; b < cols / 32; ++b) {
    const uint8_t* blk = src + b * 20;
    std::memcpy(side + 32 * (b / 8) + 4 * (b % 8), blk, 4);
    std::memcpy(quants + 16 * b, blk + 4, 16);
  }
}

// Q5_0 side record (3 uvec4 per 256): the 8 blocks' f16 d, then their 8 qh words (bit e = fifth
// bit of element e, as ggml reads qh). Quants: the low nibbles as stored.
void convert_q5_0(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t b = 0; b < cols / 32; ++b) {
    const uint8_t* blk = src + b * 22;
    uint8_t* rec = side + 48 * (b / 8);
    std::memcpy(rec + 2 * (b % 8), blk, 2);
    std::memcpy(rec + 16 + 4 * (b % 8), blk + 2, 4);
    std::memcpy(quants + 16 * b, blk + 6, 16);
  }
}

// Q5_1 side record (4 uvec4 per 256): 8 words d | m << 16, then the 8 qh words.
void convert_q5_1(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t b = 0; b < cols / 32; ++b) {
    const uint8_t* blk = src + b * 24;
    uint8_t* rec = side + 64 * (b / 8);
    std::memcpy(rec + 4 * (b % 8), blk, 4);
    std::memcpy(rec + 32 + 4 * (b % 8), blk + 4, 4);
    std::memcpy(quants + 16 * b, blk + 8, 16);
  }
}

// K-quants: group g of a super-block is its weights 32g .. 32g+31; sub-blocks of 16 are 2g (the
// group's elements 0..15) and 2g+1 (16..31).

// Q2_K (84 bytes: scales[16], qs[64], d, dmin). Side record (2 uvec4): the 16 scale bytes as
// stored (scale | min << 4, sub-block order), then d | dmin << 16. Quants: the 2-bit values.
void convert_q2_k(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t sb = 0; sb < cols / 256; ++sb) {
    const uint8_t* blk = src + sb * 84;
    uint8_t* rec = side + 32 * sb;
    std::memcpy(rec, blk, 16);
    std::memcpy(rec + 16, blk + 80, 4);
    for (int g = 0; g < 8; ++g) {
      const uint8_t* q = blk + 16 + 32 * (g / 4);
      int v[32];
      for (int e = 0; e < 32; ++e) v[e] = (q[e] >> (2 * (g % 4))) & 3;
      pack_group(v, quants + 16 * (8 * sb + g));
    }
  }
}

// Q3_K (110 bytes: hmask[32], qs[64], scales[12], d). Side record (2 uvec4): the 16 unpacked
// scales (6-bit minus 32) as int8, then d. Quants: the signed values q - (hmask bit ? 0 : 4).
void convert_q3_k(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t sb = 0; sb < cols / 256; ++sb) {
    const uint8_t* blk = src + sb * 110;
    const uint8_t* hmask = blk;
    const uint8_t* packed = blk + 96;
    uint8_t* rec = side + 32 * sb;
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? (packed[j] & 0x0F) : (packed[j - 8] >> 4);
      const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
      rec[j] = static_cast<uint8_t>(static_cast<int8_t>((low | (high << 4)) - 32));
    }
    std::memcpy(rec + 16, blk + 108, 2);
    for (int g = 0; g < 8; ++g) {
      const uint8_t* q = blk + 32 + 32 * (g / 4);
      int v[32];
      for (int e = 0; e < 32; ++e) v[e] = ((q[e] >> (2 * (g % 4))) & 3) - ((hmask[e] >> g) & 1 ? 0 : 4);
      pack_group(v, quants + 16 * (8 * sb + g));
    }
  }
}

// Q4_K (144 bytes: d, dmin, scales[12], qs[128]). Side record (1 uvec4): the 16-byte header as
// stored (get_scale_min_k4 runs in the kernel). Quants: group g = the low (g even) or high (g odd)
// nibbles of qs[32 (g/2) ..].
void convert_q4_k(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t sb = 0; sb < cols / 256; ++sb) {
    const uint8_t* blk = src + sb * 144;
    std::memcpy(side + 16 * sb, blk, 16);
    for (int g = 0; g < 8; ++g) {
      const uint8_t* q = blk + 16 + 32 * (g / 2);
      int v[32];
      for (int e = 0; e < 32; ++e) v[e] = (q[e] >> (4 * (g % 2))) & 15;
      pack_group(v, quants + 16 * (8 * sb + g));
    }
  }
}

// Q5_K (176 bytes: d, dmin, scales[12], qh[32], qs[128]). Side record (3 uvec4): the header, then
// per group a word whose bit e is element e's fifth bit (bit g of qh[e]). Quants as Q4_K.
void convert_q5_k(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t sb = 0; sb < cols / 256; ++sb) {
    const uint8_t* blk = src + sb * 176;
    const uint8_t* qh = blk + 16;
    uint8_t* rec = side + 48 * sb;
    std::memcpy(rec, blk, 16);
    for (int g = 0; g < 8; ++g) {
      const uint8_t* q = blk + 48 + 32 * (g / 2);
      int v[32];
      uint32_t high = 0;
      for (int e = 0; e < 32; ++e) {
        v[e] = (q[e] >> (4 * (g % 2))) & 15;
        high |= static_cast<uint32_t>((qh[e] >> g) & 1) << e;
      }
      store_u32(rec + 16 + 4 * g, high);
      pack_group(v, quants + 16 * (8 * sb + g));
    }
  }
}

// Q6_K (210 bytes: ql[128], qh[64], scales[16] int8, d). Quants: the low nibbles as a 4-bit plane.
// Side record (6 uvec4): the 16 int8 scales; per group two words of high bits; then d. ggml: group
// g is half n = g / 4, quarter k = g % 4, whose element l takes the low (k < 2) or high nibble of
// ql[64n + 32(k % 2) + l] and bits 2k.. of qh[32n + l].
// The high-bit words are laid out for the kernel's byte-wise assembly (weight_blocks.glsl): chunk c
// (0..3) of the group is in word c / 2; its slot j < 4 (element 4c + j) has its two bits at bit
// 8j + 2(c % 2), slot 4 + j (element 16 + 4c + j) at bit 8j + 4 + 2(c % 2). So one shift and two
// masks put every high pair next to its nibble (bits 4..5 of a byte). Stored with the upper bit
// flipped (q XOR 32): the assembled 6 bits read as a signed value are q - 32.
void convert_q6_k(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t sb = 0; sb < cols / 256; ++sb) {
    const uint8_t* blk = src + sb * 210;
    uint8_t* rec = side + 96 * sb;
    std::memcpy(rec, blk + 192, 16);
    std::memcpy(rec + 80, blk + 208, 2);
    for (int g = 0; g < 8; ++g) {
      const int n = g / 4, k = g % 4;
      const uint8_t* ql = blk + 64 * n + 32 * (k % 2);
      const uint8_t* qh = blk + 128 + 32 * n;
      int v[32];
      uint32_t high[2] = {0, 0};
      for (int l = 0; l < 32; ++l) {
        v[l] = (ql[l] >> (4 * (k / 2))) & 15;
        const uint32_t pair = ((qh[l] >> (2 * k)) & 3) ^ 2;
        const int chunk = (l % 16) / 4, slot_byte = l % 4, upper = l / 16;
        high[chunk / 2] |= pair << (8 * slot_byte + 4 * upper + 2 * (chunk % 2));
      }
      store_u32(rec + 16 + 8 * g, high[0]);
      store_u32(rec + 20 + 8 * g, high[1]);
      pack_group(v, quants + 16 * (8 * sb + g));
    }
  }
}

// MXFP4 (17 bytes: e, qs[16]). Side record (1 uvec4 per 256): the 8 blocks' E8M0 exponent bytes,
// then 8 zero bytes. Quants: the E2M1 codes in ggml's nibble order, with code 8 (-0) stored as
// code 0, so that the kernel's sign select never makes a -0 that ggml's table does not.
void convert_mxfp4(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t b = 0; b < cols / 32; ++b) {
    const uint8_t* blk = src + b * sizeof(BlockMXFP4);
    side[16 * (b / 8) + b % 8] = blk[0];
    for (int i = 0; i < 16; ++i) {
      uint8_t q = blk[1 + i];
      if ((q & 0x0F) == 0x08) q = static_cast<uint8_t>(q & 0xF0);
      if ((q & 0xF0) == 0x80) q = static_cast<uint8_t>(q & 0x0F);
      quants[16 * b + i] = q;
    }
  }
}

// IQ4_XS (136 bytes: d, scales_h, scales_l[4], qs[128]). Side record (1 uvec4): the 8 sub-blocks'
// scales ls - 32 as int8, then d. Quants: qs as stored (sub-block j is group j, in Q4_0's order).
void convert_iq4_xs(const uint8_t* src, uint64_t cols, uint8_t* quants, uint8_t* side) {
  for (uint64_t sb = 0; sb < cols / 256; ++sb) {
    BlockIQ4_XS blk;
    std::memcpy(&blk, src + sb * sizeof(BlockIQ4_XS), sizeof(BlockIQ4_XS));
    uint8_t* rec = side + 16 * sb;
    for (int j = 0; j < 8; ++j) rec[j] = static_cast<uint8_t>(static_cast<int8_t>(iq4_xs_scale(blk, j) - 32));
    std::memcpy(rec + 8, &blk.d, 2);
    std::memcpy(quants + 128 * sb, blk.qs, 128);
  }
}

// Kernel slots: F32 and BF16 share the f32 kernels.
const DeviceFormat kFormats[] = {
    {GgmlType::kF32, "f32", 0, 1, 4, 0, 0, VKS_ROW_SLOTS_F32, convert_f32},
    {GgmlType::kBF16, "f32", 0, 1, 4, 0, 0, VKS_ROW_SLOTS_F32, convert_bf16},
    {GgmlType::kF16, "f16", 1, 1, 2, 0, 0, VKS_ROW_SLOTS_F16, convert_f16},
    {GgmlType::kQ8_0, "q8_0", 2, 32, 0, 32, 1, VKS_ROW_SLOTS_Q8_0, convert_q8_0},
    {GgmlType::kQ4_0, "q4_0", 3, 32, 0, 16, 1, VKS_ROW_SLOTS_Q4_0, convert_half_and_nibbles<0x88>},
    {GgmlType::kQ4_1, "q4_1", 4, 32, 0, 16, 2, VKS_ROW_SLOTS_Q4_1, convert_q4_1},
    {GgmlType::kQ5_0, "q5_0", 5, 32, 0, 16, 3, VKS_ROW_SLOTS_Q5_0, convert_q5_0},
    {GgmlType::kQ5_1, "q5_1", 6, 32, 0, 16, 4, VKS_ROW_SLOTS_Q5_1, convert_q5_1},
    {GgmlType::kQ2_K, "q2_k", 7, 256, 0, 16, 2, VKS_ROW_SLOTS_Q2_K, convert_q2_k},
    {GgmlType::kQ3_K, "q3_k", 8, 256, 0, 16, 2, VKS_ROW_SLOTS_Q3_K, convert_q3_k},
    {GgmlType::kQ4_K, "q4_k", 9, 256, 0, 16, 1, VKS_ROW_SLOTS_Q4_K, convert_q4_k},
    {GgmlType::kQ5_K, "q5_k", 10, 256, 0, 16, 3, VKS_ROW_SLOTS_Q5_K, convert_q5_k},
    {GgmlType::kQ6_K, "q6_k", 11, 256, 0, 16, 6, VKS_ROW_SLOTS_Q6_K, convert_q6_k},
    {GgmlType::kMXFP4, "mxfp4", 12, 32, 0, 16, 1, VKS_ROW_SLOTS_MXFP4, convert_mxfp4},
    {GgmlType::kIQ4_NL, "iq4_nl", 13, 32, 0, 16, 1, VKS_ROW_SLOTS_IQ4_NL, convert_half_and_nibbles<0>},
    {GgmlType::kIQ4_XS, "iq4_xs", 14, 256, 0, 16, 1, VKS_ROW_SLOTS_IQ4_XS, convert_iq4_xs},
};
constexpr uint32_t kSlotCount = 15;

}  // namespace

uint32_t DeviceFormat::rows_per_group() const { return VKS_ROWS_LOCAL_SIZE * row_slots; }

std::string DeviceFormat::kernel_name(WeightOp op) const {
  static const char* const kOps[kWeightOpCount] = {"matvec_", "matmul_", "embed_", "matlanes_", "matdot_"};
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
