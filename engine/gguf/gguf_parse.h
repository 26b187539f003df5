#pragma once
// Internal to vks_gguf: the hardened parser behind GgufFile::open/parse.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace vks::gguf::detail {

// Limits on hostile input. Real files stay far below them.
inline constexpr uint32_t kMaxDims = 4;                       // GGML_MAX_DIMS
inline constexpr uint32_t kMaxArrayDepth = 8;                 // arrays nested in arrays
inline constexpr uint64_t kMaxStringBytes = 64ull << 20;      // one string (a chat template is KBs)
inline constexpr uint64_t kMaxTotalArrayElements = 16ull << 20;  // every array element of a file

struct ParsedGguf {
  uint32_t version = 0;
  uint32_t alignment = 32;
  std::vector<KeyValue> metadata;
  std::vector<TensorInfo> tensors;
  uint64_t data_offset = 0;  // absolute offset of the tensor data section
};

// Throws vks::Error(kCorrupt/kUnsupported) naming the problem and the byte offset.
ParsedGguf parse_gguf(std::span<const uint8_t> bytes);

}  // namespace vks::gguf::detail
