#pragma once
// Where the CPU backend's paged KV pools keep a KV head's row. A block holds block_size positions'
// rows of `stride` values (the model's widest kv_dim; a layer may use fewer), grouped by KV head:
// head h's row at position r of block b starts at value
//   b * block_size * stride + (h * block_size + r) * head_dim,
// so one head's rows over a block are one contiguous run of block_size * head_dim values.
// Attention reads one KV head's rows over every visible position. With the heads' rows side by side
// per position, it read 256 of every 1,024 bytes from each row (TinyLlama's 4 KV heads of 64
// floats), and from memory took 1.35-1.83x this layout's time (vks_bench_cpu_attention, F32 pools,
// 144 to 4,096 positions, blocks scattered); in cache neither was slower beyond the runs' spread.
// A quantized pool (kv_quant.h) places its values the same way (head_dim a multiple of its blocks).
#include <cstddef>
#include <cstdint>
#include <span>

namespace vks::cpu {

struct PagedKvLayout {
  size_t block_size;  // positions per block
  size_t stride;      // values per position in a block (every KV head's row)
  size_t head_dim;    // values per KV head's row

  // The first value of KV head kv_head's row at pool slot `slot` (block * block_size + position).
  size_t row(size_t slot, size_t kv_head) const {
    return slot / block_size * block_size * stride + (kv_head * block_size + slot % block_size) * head_dim;
  }
  // The same for position pos of a sequence whose blocks are block_table.
  size_t row(std::span<const int32_t> block_table, size_t pos, size_t kv_head) const {
    return row(static_cast<size_t>(block_table[pos / block_size]) * block_size + pos % block_size, kv_head);
  }
  // Values between one position's rows of KV heads h and h + 1.
  size_t head_step() const { return block_size * head_dim; }
};

}  // namespace vks::cpu
