#pragma once
// ggml's quantized block layouts, byte for byte (ggml-common.h). A block holds block_size weights;
// fp16 fields are raw IEEE half bits. Blocks inside a mapped file need not be aligned: copy a
// block out with memcpy before reading its 16-bit fields.
#include <cstdint>

namespace vks {

// Legacy types: 32 weights per block.
inline constexpr uint32_t QK4_0 = 32;
inline constexpr uint32_t QK4_1 = 32;
inline constexpr uint32_t QK5_0 = 32;
inline constexpr uint32_t QK5_1 = 32;
inline constexpr uint32_t QK8_0 = 32;

// ggml block_q4_0: x = d * (q - 8); element j < 16 in the low nibble of qs[j], j >= 16 in the
// high nibble of qs[j - 16].
struct BlockQ4_0 { uint16_t d; uint8_t qs[QK4_0 / 2]; };
// ggml block_q4_1: x = d * q + m, nibbles as in Q4_0.
struct BlockQ4_1 { uint16_t d; uint16_t m; uint8_t qs[QK4_1 / 2]; };
// ggml block_q5_0: x = d * (q - 16), q = nibble | (bit j of qh) << 4 (qh read as little-endian u32).
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; };
// ggml block_q5_1: x = d * q + m, q as in Q5_0.
struct BlockQ5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; };
// ggml block_q8_0: x = d * q.
struct BlockQ8_0 { uint16_t d; int8_t qs[QK8_0]; };

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);

// MXFP4 (OCP microscaling FP4, gpt-oss's expert weights): 32 weights per block.
inline constexpr uint32_t QK_MXFP4 = 32;
// ggml block_mxfp4: one shared E8M0 exponent byte e, then 32 E2M1 codes (sign bit 3, exponent
// bits 2..1, mantissa bit 0) as nibbles in Q4_0's order. x = e2m1(code) * 2^(e - 127); ggml stores
// the E2M1 values doubled (integers 0..12) and halves the scale: x = doubled(code) * 2^(e - 128).
struct BlockMXFP4 { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; };
static_assert(sizeof(BlockMXFP4) == 17);

// The non-linear 4-bit types (iq4_values.h has their 16 values): each weight is a nibble indexing
// iq4::kValues, nibbles in Q4_0's order. ggml block_iq4_nl: x = d * value(q), 32 weights a block.
inline constexpr uint32_t QK4_NL = 32;
struct BlockIQ4_NL { uint16_t d; uint8_t qs[QK4_NL / 2]; };
static_assert(sizeof(BlockIQ4_NL) == 18);

// K-quants: super-blocks of QK_K = 256 weights in sub-blocks of 16 or 32 with quantized scales.
inline constexpr uint32_t QK_K = 256;
inline constexpr uint32_t K_SCALE_SIZE = 12;

// ggml block_q2_K: 16 sub-blocks of 16; scales[i] = scale (low 4 bits) | min (high 4 bits);
// x = d * scale * q - dmin * min, q 2 bits.
struct BlockQ2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d; uint16_t dmin; };
// ggml block_q3_K: 16 sub-blocks of 16 with 6-bit signed scales (packed in 12 bytes, minus 32);
// q = 2 low bits from qs, minus 4 when the hmask bit is clear; x = d * scale * q.
struct BlockQ3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[K_SCALE_SIZE]; uint16_t d; };
// ggml block_q4_K: 8 sub-blocks of 32 with 6-bit scales and mins (get_scale_min_k4);
// x = d * scale * q - dmin * min, q 4 bits.
struct BlockQ4_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };
// ggml block_q5_K: as Q4_K with a fifth bit per weight in qh.
struct BlockQ5_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
// ggml block_q6_K: 16 sub-blocks of 16 with int8 scales; q = 4 low bits (ql) | 2 high bits (qh) << 4,
// x = d * scale * (q - 32).
struct BlockQ6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };

static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

// ggml block_iq4_xs: 8 sub-blocks of 32 with 6-bit scales ls (low 4 bits in scales_l, nibble ib % 2
// of byte ib / 2; high 2 bits at bit 2 ib of scales_h); x = (d * (ls - 32)) * value(q), sub-block
// ib's nibbles in qs[16 ib ..] in Q4_0's order.
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };
static_assert(sizeof(BlockIQ4_XS) == 136);
// The 6-bit scale of sub-block ib (0..7) of an IQ4_XS block, as stored (ggml subtracts 32).
inline int iq4_xs_scale(const BlockIQ4_XS& b, int ib) {
  return ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((b.scales_h >> (2 * ib)) & 3) << 4);
}

// ggml's get_scale_min_k4: the 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block.
// Sub-blocks 0-3 keep theirs in the low 6 bits of bytes j and j+4; sub-blocks 4-7 take 4 bits from
// byte j+4 and their top 2 bits from the spare high bits of bytes j-4 and j.
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

}  // namespace vks
