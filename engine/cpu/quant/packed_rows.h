#pragma once
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, IQ4_NL, Q4_K, Q5_K and Q6_K matrices rearranged once, when the CPU
// runner loads a model, into the layout the packed kernels read (WeightLayout::kRows16; the
// avx512vnni level's kernels for all of them, and the amx level's own Q4_0/Q8_0/Q4_K tiles): groups
// of 16 rows,
// and within a group, block by block, the 16 rows' scales side by side and then their quants in the
// VNNI order (dword k of every row, rows 0..15, then dword k + 1). One group is one sequential
// stream of memory, the scales are one load, and the quants are already what vpdpbusd (a decode
// step) and a tile's B operand (prefill) read: no per-step gathers, transposes or row shuffles. The
// same bytes as the GGUF rows, so a group starts where its first row did. The kernels give the bits
// of their level's GGUF-layout kernels (kernels.h: "block sums" for the 32-element types, the amx
// level's "K-block sums" for Q4_K, the lane convention for the others).
//
// Exactly: group g (rows 16g..16g+15) starts at byte 16g * row_bytes; its block b at + b * 16 *
// block_bytes (Q4_0 288 bytes, Q8_0 544, Q4_K 2304, Q5_K 2816); in it, for Q4_0 and Q8_0, row r's
// fp16 scale at + 2r (32 bytes: one vcvtph2ps gives row r's d in lane r), then for k = 0..3 (Q4_0:
// the 16 nibble bytes) or 0..7 (Q8_0: the 32 signed bytes, stored as in the file) row r's quant
// dword k at + 32 + 64k + 4r. A group's 64-byte quant rows are a tile's B operand (B[k][4r + j] =
// element 4k + j of row r); Q4_0's dword k holds elements 4k..4k+3 in its low nibbles and 16 + 4k..
// in its high ones. MXFP4's (272 bytes): row r's E8M0 byte at + r, then Q4_0's nibble dwords from +
// 16 (row r's dword k at + 16 + 64k + 4r). IQ4_NL's is Q4_0's (its indices where Q4_0 has nibbles). Q4_1's (320 bytes): row r's fp16 d and m at + 4r, then
// Q4_0's nibble dwords from + 64. Q5_0's (352 bytes): Q4_0's scales, then row r's 32 fifth bits at +
// 32 + 4r, then Q4_0's nibble dwords from + 96; Q5_1's (384 bytes): Q4_1's d and m, its fifth bits
// at + 64 + 4r, the nibble dwords from + 128. Q4_K's block is 36 dwords, row r's dword k at + 64k +
// 4r: dword 0 its fp16 d and dmin, 1..3 its 12 scale bytes, 4..35 its 128 bytes of nibbles (one
// load gives 16 rows' scales, or 16 rows' 4 bytes of nibbles). Q5_K's is 44 dwords, laid out as
// Q4_K's with its 32 bytes of fifth bits as dwords 4..11 and the nibbles as 12..43. Q6_K's block is
// 52 dwords and its fp16 d: row r's dword k at + 64k + 4r (0..31 the low bits, 32..47 the high
// bits, 48..51 the 16 signed scales), then the 16 rows' d side by side at + 3328 + 2r (3360 bytes
// per group and block).
#include <cstdint>

#include "engine/cpu/quant/isa.h"
#include "engine/model/llama_model.h"

namespace vks::cpuq {

// Whether qmatmul at this level reads `type` in WeightLayout::kRows16: the level's kernel table has
// a packed kernel for it (KernelTable::packed; defined in qmatmul.cpp, beside the tables). A matrix
// of it can be packed when its rows are a multiple of kRows16Group.
bool packs_rows16(GgmlType type, CpuIsa isa);

// Writes w's bytes (WeightLayout::kGguf; a type packs_rows16 accepts at some level; rows a multiple
// of kRows16Group) into dst (w.nbytes bytes, not overlapping w.data) in the kRows16 layout.
// Throws vks::Error for anything else.
void pack_rows16(const TensorRef& w, uint8_t* dst);

// The inverse: kRows16 bytes back to GGUF rows (tests).
void unpack_rows16(const TensorRef& packed, uint8_t* dst);

}  // namespace vks::cpuq
