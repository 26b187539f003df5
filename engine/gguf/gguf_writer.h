#pragma once
// Writes GGUF v3 (or v2) files: metadata of every value type (nested arrays included), tensor infos
// with aligned offsets, and tensor data streamed to disk so that multi-GB models never sit in memory.
// Used by tools/make_model and by tests that need hand-built (also deliberately wrong) models.
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace vks::gguf {

// Value builders.
Value make_uint8(uint8_t v);
Value make_int8(int8_t v);
Value make_uint16(uint16_t v);
Value make_int16(int16_t v);
Value make_uint32(uint32_t v);
Value make_int32(int32_t v);
Value make_uint64(uint64_t v);
Value make_int64(int64_t v);
Value make_float32(float v);
Value make_float64(double v);
Value make_bool(bool v);
Value make_string(std::string v);
// Elements must all have type elem_type (checked when the file is written).
Value make_array(ValueType elem_type, std::vector<Value> elems);
Value make_string_array(const std::vector<std::string>& v);
Value make_float32_array(const std::vector<float>& v);
Value make_int32_array(const std::vector<int32_t>& v);

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3);

  // Also records general.alignment (uint32) in the metadata. Power of two.
  void set_alignment(uint32_t alignment);
  uint32_t alignment() const { return alignment_; }
  // Adds a key, or replaces the value of an existing one (keeping its place).
  void set(const std::string& key, Value value);
  void remove(const std::string& key);
  const std::vector<KeyValue>& metadata() const { return metadata_; }

  // Declares a tensor (ggml dims order); its data offset follows the previous tensor's, aligned.
  // Throws kInvalidArgument for a duplicate name, 0 or >4 dims, or a row not a whole number of blocks.
  const TensorInfo& add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> dims);
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  // Header, metadata, tensor infos and the padding up to the data section.
  std::vector<uint8_t> header_bytes() const;
  uint64_t data_offset() const { return header_bytes().size(); }
  uint64_t file_size() const;

  // The whole file in memory; data[i] holds tensors()[i].nbytes bytes.
  std::vector<uint8_t> to_bytes(const std::vector<std::vector<uint8_t>>& data) const;

 private:
  uint32_t version_;
  uint32_t alignment_ = 32;
  uint64_t next_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::vector<TensorInfo> tensors_;
};

// Streams one GGUF file to disk: the header on construction, then the tensors' bytes in declaration
// order (any chunking; padding between tensors is inserted automatically), then finish().
// Throws vks::Error(kIo) on write failures and kInvalidArgument when more or fewer bytes are given.
class GgufFileSink {
 public:
  GgufFileSink(const GgufWriter& writer, const std::string& path);
  GgufFileSink(const GgufFileSink&) = delete;
  GgufFileSink& operator=(const GgufFileSink&) = delete;
  ~GgufFileSink();  // closes (an unfinished file is left incomplete on disk)

  void write(std::span<const uint8_t> bytes);
  void finish();
  // Index of the tensor whose bytes come next (== tensors().size() when all are written).
  size_t current_tensor() const { return tensor_; }

 private:
  void put(const void* data, size_t n);
  void pad_to_alignment();

  std::vector<TensorInfo> tensors_;
  uint32_t alignment_;
  std::string path_;
  std::FILE* file_ = nullptr;
  uint64_t written_ = 0;        // bytes written to the file so far
  uint64_t data_offset_ = 0;
  size_t tensor_ = 0;           // current tensor
  uint64_t tensor_written_ = 0; // bytes of the current tensor written
};

// Convenience: writes a whole file whose tensor data is in memory.
void write_gguf_file(const GgufWriter& writer, const std::vector<std::vector<uint8_t>>& data, const std::string& path);

}  // namespace vks::gguf
