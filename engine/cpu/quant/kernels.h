#pragma once
// The per-ISA kernel tables behind qmatmul. Each ISA level lives in its own source file compiled
// for its target; this header holds only declarations, so nothing inline is shared between files
// compiled for different targets (the linker could otherwise keep an AVX2 copy of a shared inline
// function and run it on a CPU without AVX2).
//
// The bits every level computes (the "lane convention"): for output y[t][r], for each weight block
// b in order, the integer products of the block are summed into 4 lanes, element e of the block
// going to lane (e % 16) / 4 (what SSSE3's maddubs + madd produce on 16-byte chunks); integer
// offset corrections (Q4_0's -8, Q5_0's -16, MXFP4's -12 on its values + 12, Q3_K's -4, Q6_K's -32,
// times the activation sums) are subtracted from lane 0. Then acc[k] = acc[k] + float(L[k]) * (d_w
// * d_x) for k = 0..3, and a separate float macc collects the min terms (Q4_1/Q5_1: m_w * s_x;
// Q2_K/Q4_K/Q5_K: float(-sum of min * bsum) * (dmin_w * d_x)). Finally y = ((acc0 + acc1) + (acc2 +
// acc3)) + macc. Integer sums are exact, so any ISA computing them gives the same lanes; the float
// operations are the same sequence everywhere (the library is compiled with -ffp-contract=off so no
// level fuses a multiply-add the others do not).
//
// The avx512vnni and amx levels' Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4 and IQ4_NL follow a convention
// of their own ("block sums"): for y[t][r], for each block b in order, S_b = the exact integer sum of
// the block's 32 products, Q4_0's -8 and Q5_0's -16 offsets included (the offset times the
// activation block's sum; MXFP4's weights are its codes' doubled values, d_w half its E8M0 scale;
// IQ4_NL's its indices' values);
// acc = acc + float(S_b) * (d_w * d_x), then for Q4_1 and Q5_1 (their quants unsigned, no offset)
// acc = acc + m_w * s_x; y = acc. One float accumulator per output, so one multiply and one add
// per block and output, where the lane convention's four lanes cost four of each. Its bits differ from the lower levels' (the
// rounding differs), but are the same for any token count, row split and thread count: the batch
// invariance the engine needs.
//
// The amx level's Q4_K follows "K-block sums" (kernels_amx_kquant.cpp): for y[t][r], for each
// 256-element block in order, with P_j the exact integer sum of sub-block j's 32 products (nibble
// 0..15 times activation), S = sum_j sc_j * P_j and M = sum_j m_j * (bsum_2j + bsum_2j+1), both
// exact int32; then acc = (acc + float(S) * (d_w * d_x)) - float(M) * (dmin_w * d_x); y = acc. One
// float accumulator per output (the min term subtracted per block), the same for any token count,
// row split and thread count. Every other type at the amx level is the avx512vnni level's (Q5_K and
// Q6_K on packed rows too, read by that level's kernels to its bits).
#include <cstddef>
#include <cstdint>

namespace vks::cpuq {

// y[t * y_stride + r] = W[r] · x[t] for r < n_rows, t < n_tokens. w: row 0's blocks, w_stride bytes
// per row; act: token t's quantized activations at act + t * act_stride bytes; n_blocks: blocks
// per row.
using GemmFn = void (*)(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                        size_t n_tokens, size_t n_blocks, float* y, size_t y_stride);

// A kernel whose tiles read the activations in a layout of its own (the amx level's) gets them
// prepared once per qmatmul call, after quantization and before the work items run, rather than
// once per work item: a 2048-row matrix is 16 items of 128 rows, each of which would rearrange the
// same tokens. Tile j is tokens [16 j, 16 j + 16) of a product's activations (fewer in the last);
// a work item starts at a multiple of 16 tokens, so its tiles are whole tiles of the product's.
inline constexpr size_t kPreparedTileTokens = 16;

// Prepares one tile: tokens [0, n_tokens) (1..16) of act, n_blocks blocks each, into out (64-byte
// aligned, prepared_bytes(16, n_blocks) bytes, or prepared_bytes(n_tokens, n_blocks) for a last
// tile of fewer than 16 tokens).
using PrepareTileFn = void (*)(const uint8_t* act, size_t act_stride, size_t n_tokens, size_t n_blocks, uint8_t* out);
// The bytes of n_tokens tokens' tiles, a multiple of 64; tile j starts at bytes(16 j, n_blocks).
using PreparedBytesFn = size_t (*)(size_t n_tokens, size_t n_blocks);
// GemmFn's product reading its tiles from prepared (tile 0: tokens [0, 16) of act), null where the
// call prepared none of the item's tiles (it reads none: see PreparedKernel's thresholds).
using PreparedGemmFn = void (*)(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act,
                                size_t act_stride, const uint8_t* prepared, size_t n_tokens, size_t n_blocks, float* y,
                                size_t y_stride);
struct PreparedKernel {
  PreparedGemmFn gemm = nullptr;
  PrepareTileFn prepare = nullptr;
  PreparedBytesFn bytes = nullptr;
  // The tiles the kernel reads, so that only those are prepared (none for a decode step): a work
  // item of tiles_from tokens or more reads its whole tiles, and its last partial tile where that
  // has tail_from tokens or more (1 <= both <= 16).
  uint8_t tiles_from = 0;
  uint8_t tail_from = 0;
};

// A kernel for weights packed in groups of 16 rows (its activations prepared per call as
// PreparedKernel says, or not at all where its prepare is null: it reads them in place), and the
// tokens of one qmatmul work item for it (a multiple of kPreparedTileTokens).
struct PackedKernel {
  PreparedKernel prepared;
  uint16_t tokens_per_item = 0;
};

// act_quant.h's quantizers; a level may compute them with its own instructions, to the same bits.
struct ActQ8x32;
struct ActQ8x256;
using QuantizeQ8x32Fn = void (*)(const float* x, ActQ8x32* out, size_t n_blocks);
using QuantizeQ8x256Fn = void (*)(const float* x, ActQ8x256* out, size_t n_blocks);

// Indexed by ggml type id; null where the level has no kernel of its own.
inline constexpr size_t kMaxTypeId = 64;
struct KernelTable {
  QuantizeQ8x32Fn quantize_q8x32 = nullptr;  // set by the scalar level
  QuantizeQ8x256Fn quantize_q8x256 = nullptr;
  GemmFn gemm[kMaxTypeId] = {};
  // Where set (its gemm), the type's kernel instead of gemm's, with its activations prepared per call.
  PreparedKernel prepared[kMaxTypeId] = {};
  // Where set, the kernel for one token (a decode step's matvec) instead of gemm's: a lower
  // level's one-row kernel reads memory as a single stream, which can beat a wider kernel that
  // reads several rows side by side (all give the same bits).
  GemmFn one_token[kMaxTypeId] = {};
  // Set by a level whose kernels give the level below's bits for every type it sets: it keeps that
  // level's one-token kernels where it sets its own gemm (qmatmul.cpp's table builder drops them
  // otherwise; the flag is not inherited).
  bool keeps_one_token_below = false;
  // Where set, the tokens of one qmatmul work item for this type (otherwise 64): a kernel that
  // prepares a row group's weights per call (the amx level unpacks them) prepares them once for
  // more tokens. Any value gives the same bits; a multiple of kPreparedTileTokens.
  uint16_t tokens_per_item[kMaxTypeId] = {};
  // Where set, the kernel for a matrix in WeightLayout::kRows16 (packed_rows.h): PreparedGemmFn's
  // contract with w_stride a row's bytes (a group of 16 rows starts at w + r * w_stride, r a
  // multiple of 16) and n_rows a multiple of 16. Absent where the level cannot read the layout
  // (qmatmul refuses it).
  PackedKernel packed[kMaxTypeId] = {};
};

// Each level sets the entries it implements (kernels_scalar.cpp, kernels_avx.cpp, kernels_avx2.cpp,
// kernels_avx512vnni.cpp and its packed K-quants, kernels_amx.cpp, kernels_amx_kquant.cpp,
// kernels_amx_packed.cpp; on aarch64 kernels_neondot.cpp). Only the build's architecture's levels
// are compiled (engine/cpu/quant/CMakeLists.txt).
void add_scalar_kernels(KernelTable& table);
void add_avx_kernels(KernelTable& table);
void add_avx2_kernels(KernelTable& table);
void add_avx512vnni_kernels(KernelTable& table);
void add_amx_kernels(KernelTable& table);
// aarch64's NEON dotprod level (kernels_neondot.cpp), in the lane convention.
void add_neondot_kernels(KernelTable& table);
// The amx level's K-quants (kernels_amx_kquant.cpp), called by add_amx_kernels.
void add_amx_kquant_kernels(KernelTable& table);
// The amx level's Q4_0/Q8_0 tiles on packed weights (kernels_amx_packed.cpp), called by add_amx_kernels.
void add_amx_packed_kernels(KernelTable& table);
// The avx512vnni level's Q4_K, Q5_K and Q6_K on packed weights
// (kernels_avx512vnni_q4k_q5k_packed.cpp, kernels_avx512vnni_q6k_packed.cpp), called by
// add_avx512vnni_kernels: vpdpbusd alone, so the level below AMX reads the layout for them too, to
// its own bits (the amx level's Q4_K replaces that one with its own).
void add_avx512vnni_q4k_q5k_packed_kernels(KernelTable& table);
void add_avx512vnni_q6k_packed_kernels(KernelTable& table);
// The avx512vnni level's Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4 and IQ4_NL
// (kernels_avx512vnni_block_sums.cpp), under block sums, for any token count: GemmFn's contract on GGUF rows, and on packed rows
// (w_stride a row's bytes, n_rows a multiple of 16). add_avx512vnni_kernels sets them; the amx
// level's Q4_0 and Q8_0 tiles hand these the tokens below a tile, so that both levels give the same
// bits (its other types are these).
void add_avx512vnni_block_sums_kernels(KernelTable& table);
void block_sums_q4_0(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                     size_t n_tokens, size_t n_blocks, float* y, size_t y_stride);
void block_sums_q8_0(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                     size_t n_tokens, size_t n_blocks, float* y, size_t y_stride);
void block_sums_mxfp4(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                      size_t n_tokens, size_t n_blocks, float* y, size_t y_stride);
void block_sums_q4_0_packed(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                            size_t n_tokens, size_t n_blocks, float* y, size_t y_stride);
void block_sums_q8_0_packed(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                            size_t n_tokens, size_t n_blocks, float* y, size_t y_stride);

// act_quant.h's quantizers with 512-bit registers (act_quant_avx512.cpp), to the same bits.
void quantize_act_q8x32_avx512(const float* x, ActQ8x32* out, size_t n_blocks);
void quantize_act_q8x256_avx512(const float* x, ActQ8x256* out, size_t n_blocks);

// The fallback for any type with a dequantizer (float weights, and quantized types without an
// integer kernel): each row chunk dequantized to floats, dotted with float activations in ref::dot's
// order (8 lanes, element i to lane i % 8, lanes combined pairwise, then the cols % 8 tail).
using DequantizeFn = void (*)(const uint8_t* src, float* dst, uint64_t n_blocks);
void gemm_dequantized(DequantizeFn dequantize, uint32_t block_size, uint32_t block_bytes, const uint8_t* w,
                      size_t w_stride, size_t n_rows, const float* x, size_t n_cols, size_t n_tokens, float* y,
                      size_t y_stride);

}  // namespace vks::cpuq
