#include "engine/cpu/quant/packed_rows.h"

#include <cstring>
#include <string>

#include "engine/common/error.h"
#include "engine/gguf/ggml_type.h"

namespace vks::cpuq {
namespace {

// The block of a type that packs: its values and bytes, the bytes of its scale before the dwords
// (head) or after them (tail), packed 16 rows' side by side, and its dwords.
struct PackedBlock {
  size_t values = 0;
  size_t bytes = 0;
  size_t head = 0;
  size_t dwords = 0;
  size_t tail = 0;
};

bool packable_type(GgmlType type, PackedBlock& block) {
  switch (type) {
    case GgmlType::kQ4_0: block = {32, 18, 2, 4}; return true;      // 16 bytes of nibbles
    case GgmlType::kQ4_1: block = {32, 20, 4, 4}; return true;      // d and m, 16 bytes of nibbles
    case GgmlType::kQ5_0: block = {32, 22, 2, 5}; return true;      // 32 fifth bits, 16 bytes of nibbles
    case GgmlType::kQ5_1: block = {32, 24, 4, 5}; return true;      // d and m, Q5_0's dwords
    case GgmlType::kQ8_0: block = {32, 34, 2, 8}; return true;      // 32 signed bytes
    case GgmlType::kMXFP4: block = {32, 17, 1, 4}; return true;    // an E8M0 scale, 16 bytes of nibbles
    case GgmlType::kIQ4_NL: block = {32, 18, 2, 4}; return true;   // as Q4_0: d, 16 bytes of indices
    case GgmlType::kQ4_K: block = {256, 144, 0, 36}; return true;  // d and dmin, 12 scale bytes, 128 of nibbles
    case GgmlType::kQ5_K: block = {256, 176, 0, 44}; return true;  // Q4_K's, with 32 bytes of fifth bits before the nibbles
    case GgmlType::kQ6_K: block = {256, 210, 0, 52, 2}; return true;  // 128 + 64 bytes of bits, 16 scales; d
    default: return false;
  }
}

// The checks both directions share: the layout `from` is what w must be in.
PackedBlock check(const TensorRef& w, WeightLayout from, const uint8_t* dst, const char* what) {
  const std::string where = std::string(what) + ": tensor '" + w.name + "'";
  PackedBlock block;
  if (!packable_type(w.type, block)) {
    throw Error(ErrorCode::kInvalidArgument, where + " has type " + std::string(ggml_type_name(w.type)) +
                                                 ", which has no packed layout (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, IQ4_NL, Q4_K, Q5_K "
                                                 "and Q6_K have)");
  }
  if (w.layout != from) {
    throw Error(ErrorCode::kInvalidArgument, where + (from == WeightLayout::kGguf ? " is already packed in groups of rows"
                                                                                 : " is not packed in groups of rows"));
  }
  if (w.rows % kRows16Group != 0) {
    throw Error(ErrorCode::kInvalidArgument, where + " has " + std::to_string(w.rows) + " rows, not a multiple of " +
                                                 std::to_string(kRows16Group));
  }
  if (w.cols % block.values != 0 || w.nbytes != w.rows * (w.cols / block.values) * block.bytes) {
    throw Error(ErrorCode::kInvalidArgument, where + " has " + std::to_string(w.nbytes) + " bytes for " +
                                                 std::to_string(w.rows) + " x " + std::to_string(w.cols) + " values");
  }
  if (w.data == nullptr || dst == nullptr) throw Error(ErrorCode::kInvalidArgument, where + ": no data or destination");
  return block;
}

// Calls fn(gguf_offset, packed_offset, bytes) for every piece of every block: a row's scale goes to
// the group's block start + head r, its dword k to + 16 head + 64k + 4r, its tail to + 16 head +
// 64 dwords + tail r.
template <class Fn>
void for_each_piece(const TensorRef& w, const PackedBlock& block, const Fn& fn) {
  const size_t n_blocks = w.cols / block.values, row_bytes = n_blocks * block.bytes;
  const size_t group_block = kRows16Group * block.bytes;  // a block of 16 rows in the packed layout
  for (size_t g = 0; g < w.rows; g += kRows16Group) {
    const size_t group = g * row_bytes;
    for (size_t b = 0; b < n_blocks; ++b) {
      const size_t packed = group + b * group_block;
      for (size_t r = 0; r < kRows16Group; ++r) {
        const size_t gguf = group + r * row_bytes + b * block.bytes;
        if (block.head != 0) fn(gguf, packed + block.head * r, block.head);
        for (size_t k = 0; k < block.dwords; ++k) {
          fn(gguf + block.head + 4 * k, packed + block.head * kRows16Group + 4 * kRows16Group * k + 4 * r, size_t{4});
        }
        if (block.tail != 0) {
          const size_t tail_at = (block.head + 4 * block.dwords) * kRows16Group;
          fn(gguf + block.head + 4 * block.dwords, packed + tail_at + block.tail * r, block.tail);
        }
      }
    }
  }
}

}  // namespace

void pack_rows16(const TensorRef& w, uint8_t* dst) {
  const PackedBlock block = check(w, WeightLayout::kGguf, dst, "pack_rows16");
  for_each_piece(w, block, [&](size_t gguf, size_t packed, size_t n) { std::memcpy(dst + packed, w.data + gguf, n); });
}

void unpack_rows16(const TensorRef& packed, uint8_t* dst) {
  const PackedBlock block = check(packed, WeightLayout::kRows16, dst, "unpack_rows16");
  for_each_piece(packed, block,
                 [&](size_t gguf, size_t at, size_t n) { std::memcpy(dst + gguf, packed.data + at, n); });
}

}  // namespace vks::cpuq
