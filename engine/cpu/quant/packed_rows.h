#pragma once
// Q4_0 and Q8_0 matrices rearranged once, when the CPU runner loads a model, into the layout the
// amx level's kernels read (WeightLayout::kRows16): groups of 16 rows, and within a group, pair of
// blocks by pair, the 16 rows' fp16 scales side by side and then their quants in the VNNI order
// (dword k of every row, rows 0..15, then dword k + 1). One group is one sequential stream of
// memory, the scales are one load, and the quants are already what vpdpbusd (a decode step) and a
// tile's B operand (prefill) read, every 64-byte quant row on a cache line of its own: no per-step
// gathers, transposes, row shuffles or split loads. The same bytes as the GGUF rows, so a group
// starts where its first row did. The kernels give the bits of the amx level's GGUF-layout kernels
// (kernels.h, "block sums").
//
// Exactly (packed_layout.h computes it): group g (rows 16g..16g+15) starts at byte 16g * row_bytes
// (a multiple of 64 with an even block count; the runner's copies start on a line). With
// B = 16 * block_bytes (Q4_0 288, Q8_0 544) and Q = B - 32 (a block's 16 rows of quants: 256, 512),
// blocks b and b + 1 (b even) lie at + b * B as a pair of 2B bytes (576 = 9 * 64, 1088 = 17 * 64):
// block b's 16 scales at + 0, block b + 1's at + 32, block b's quants at + 64, block b + 1's at
// + 64 + Q. A last block without a partner (an odd block count) lies at + b * B as 32 bytes of
// scales and then its quants (its loads may straddle lines). Within a block's scales, row r's fp16
// d at + 2r (one vcvtph2ps gives row r's d in lane r); within its quants, for k = 0..3 (Q4_0: the
// 16 nibble bytes) or 0..7 (Q8_0: the 32 signed bytes, stored as in the file) row r's quant dword
// k at + 64k + 4r. A block's 64-byte quant rows are a tile's B operand (B[k][4r + j] = element
// 4k + j of row r); Q4_0's dword k holds elements 4k..4k+3 in its low nibbles and 16 + 4k.. in its
// high ones.
#include <cstdint>

#include "engine/cpu/quant/isa.h"
#include "engine/model/llama_model.h"

namespace vks::cpuq {

// Whether qmatmul at this level reads `type` in WeightLayout::kRows16 (a matrix of it can be
// packed when its rows are a multiple of kRows16Group).
bool packs_rows16(GgmlType type, CpuIsa isa);

// Writes w's bytes (WeightLayout::kGguf; a type packs_rows16 accepts at some level; rows a multiple
// of kRows16Group) into dst (w.nbytes bytes, not overlapping w.data) in the kRows16 layout.
// Throws vks::Error for anything else.
void pack_rows16(const TensorRef& w, uint8_t* dst);

// The inverse: kRows16 bytes back to GGUF rows (tests).
void unpack_rows16(const TensorRef& packed, uint8_t* dst);

}  // namespace vks::cpuq
