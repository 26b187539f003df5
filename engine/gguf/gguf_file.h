#pragma once
// Read-only view of a GGUF file (v2 and v3) over an mmap. Every length, count, offset, dimension
// and type is checked against the file size before use; problems throw vks::Error(kCorrupt or
// kUnsupported) whose message names the problem and the byte offset.
// (API contract shared by the tokenizer, model loader and tools; see engine/gguf/*.cpp.)
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/error.h"
#include "engine/gguf/ggml_type.h"

namespace vks::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
std::string_view value_type_name(ValueType t);

// One metadata value. Scalars are widened into the union-like fields below; arrays keep their
// element type and elements (arrays of arrays nest).
struct Value {
  ValueType type = ValueType::kUint8;
  uint64_t u = 0;        // every unsigned integer type and bool
  int64_t i = 0;         // every signed integer type
  double f = 0;          // float32 / float64
  std::string s;         // string
  ValueType elem_type = ValueType::kUint8;  // for arrays
  std::vector<Value> arr;                   // for arrays

  bool is_integer() const;
  std::optional<int64_t> as_int() const;    // any integer type (or bool), range-checked
  std::optional<double> as_float() const;   // any numeric type
};

struct KeyValue {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the contiguous (fastest) dimension
  uint64_t offset = 0;         // from the start of the tensor data section (aligned)
  uint64_t nbytes = 0;         // computed from type and dims
  uint64_t n_elements() const;
};

class GgufFile {
 public:
  // Maps and parses the file. Throws vks::Error (kIo, kCorrupt, kUnsupported).
  static GgufFile open(const std::string& path);
  // Parses a buffer the caller keeps alive (tests, fuzzing). Same checks as open().
  static GgufFile parse(std::span<const uint8_t> bytes);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  uint32_t version() const;
  uint32_t alignment() const;                 // general.alignment, default 32
  const std::vector<KeyValue>& metadata() const;
  const Value* find(std::string_view key) const;  // nullptr if absent

  // Typed lookups: nullopt when absent; throw kCorrupt when present with an incompatible type.
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  // Array lookups (throw kCorrupt if the element type does not convert).
  std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
  std::optional<std::vector<float>> get_float_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const;
  const TensorInfo* find_tensor(std::string_view name) const;  // nullptr if absent
  // Raw bytes of a tensor inside the mapping (valid while this GgufFile lives).
  std::span<const uint8_t> tensor_data(const TensorInfo& t) const;
  uint64_t data_offset() const;  // absolute file offset of the tensor data section
  uint64_t file_size() const;
  // Once a caller has copied bytes of the mapped file it reads no more (the CPU runner's weights),
  // it can give back the pages this process holds of them: they stay readable (a read brings them
  // back from the page cache) but stop counting in its resident memory. A no-op for a parsed buffer
  // or a range outside the mapping.
  void release_pages(const uint8_t* p, size_t n) const;

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vks::gguf
