#pragma once
// Where a block lies inside a group of 16 rows packed in WeightLayout::kRows16 (packed_rows.h has
// the layout byte by byte): the one formula pack_rows16, unpack_rows16 and the kernels share.
#include <cstddef>

namespace vks::cpuq {

// Offsets from a group's first byte of block b's 16 fp16 scales and of its quants. block_bytes:
// one row's block in the file (Q4_0 18, Q8_0 34). Blocks go in pairs, both blocks' scales first
// (64 bytes) and then each block's 16 * (block_bytes - 2) bytes of quants, so that every quant row
// of a pair starts on a 64-byte boundary of the group (a pair is 576 or 1088 bytes, a multiple of
// 64); a last block without a partner has its 32 bytes of scales and then its quants.
struct PackedBlockAt {
  size_t scales;
  size_t quants;
};

constexpr PackedBlockAt packed_block_at(size_t b, size_t n_blocks, size_t block_bytes) {
  const size_t group_block = 16 * block_bytes, quant_bytes = group_block - 32;
  const size_t pair = (b & ~size_t{1}) * group_block;
  if ((b | 1) >= n_blocks) return {pair, pair + 32};  // the last block, alone
  const size_t second = b & 1;
  return {pair + 32 * second, pair + 64 + second * quant_bytes};
}

}  // namespace vks::cpuq
