#include "engine/gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "engine/common/error.h"
#include "engine/gguf/gguf_parse.h"

namespace vks::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kUint8: return "uint8";
    case ValueType::kInt8: return "int8";
    case ValueType::kUint16: return "uint16";
    case ValueType::kInt16: return "int16";
    case ValueType::kUint32: return "uint32";
    case ValueType::kInt32: return "int32";
    case ValueType::kFloat32: return "float32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kUint64: return "uint64";
    case ValueType::kInt64: return "int64";
    case ValueType::kFloat64: return "float64";
  }
  return "unknown";
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kUint16: case ValueType::kInt16:
    case ValueType::kUint32: case ValueType::kInt32: case ValueType::kUint64: case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> Value::as_int() const {
  switch (type) {
    case ValueType::kUint8: case ValueType::kUint16: case ValueType::kUint32: case ValueType::kUint64:
    case ValueType::kBool:
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u);
    case ValueType::kInt8: case ValueType::kInt16: case ValueType::kInt32: case ValueType::kInt64:
      return i;
    default:
      return std::nullopt;
  }
}

std::optional<double> Value::as_float() const {
  switch (type) {
    case ValueType::kFloat32: case ValueType::kFloat64: return f;
    case ValueType::kUint8: case ValueType::kUint16: case ValueType::kUint32: case ValueType::kUint64:
      return static_cast<double>(u);
    case ValueType::kInt8: case ValueType::kInt16: case ValueType::kInt32: case ValueType::kInt64:
      return static_cast<double>(i);
    default:
      return std::nullopt;
  }
}

uint64_t TensorInfo::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;  // the parser guarantees this does not overflow
  return n;
}

namespace {

// Owns a read-only private mapping of a whole file.
class Mapping {
 public:
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (addr_ != nullptr) munmap(addr_, size_);
  }

  void map(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      throw Error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                  path + ": cannot open: " + std::strerror(err) + (err == ENOENT ? " (check the model path)" : ""));
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      throw Error(ErrorCode::kIo, path + ": cannot stat: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      throw Error(ErrorCode::kIo, path + ": not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ == 0) {
      ::close(fd);
      throw Error(ErrorCode::kCorrupt, path + ": file is empty, not a GGUF model");
    }
    void* addr = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (addr == MAP_FAILED) throw Error(ErrorCode::kIo, path + ": cannot mmap: " + std::strerror(err));
    addr_ = addr;
  }

  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(addr_), size_}; }

  // The whole pages inside [p, p + n), if it lies in the mapping: dropped from this process's page
  // tables. The mapping is private, read-only and never written, so a later read faults the same
  // bytes back in from the file (the page cache).
  void release(const uint8_t* p, size_t n) const {
    const auto* base = static_cast<const uint8_t*>(addr_);
    if (addr_ == nullptr || p < base || n > size_ || p - base > static_cast<ptrdiff_t>(size_ - n)) return;
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t first = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
    if (end > first) madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED);
  }

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

struct GgufFile::Impl {
  Mapping mapping;  // empty when parsing a caller-owned buffer
  std::span<const uint8_t> bytes;
  detail::ParsedGguf parsed;
  std::unordered_map<std::string_view, size_t> key_index;     // views into parsed.metadata
  std::unordered_map<std::string_view, size_t> tensor_index;  // views into parsed.tensors

  void build_indexes() {
    for (size_t k = 0; k < parsed.metadata.size(); ++k) key_index.emplace(parsed.metadata[k].key, k);
    for (size_t k = 0; k < parsed.tensors.size(); ++k) tensor_index.emplace(parsed.tensors[k].name, k);
  }
};

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->mapping.map(path);
  impl->bytes = impl->mapping.bytes();
  try {
    impl->parsed = detail::parse_gguf(impl->bytes);
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
  impl->build_indexes();
  return GgufFile(std::move(impl));
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes) {
  auto impl = std::make_unique<Impl>();
  impl->bytes = bytes;
  impl->parsed = detail::parse_gguf(bytes);
  impl->build_indexes();
  return GgufFile(std::move(impl));
}

uint32_t GgufFile::version() const { return impl_->parsed.version; }
uint32_t GgufFile::alignment() const { return impl_->parsed.alignment; }
const std::vector<KeyValue>& GgufFile::metadata() const { return impl_->parsed.metadata; }
const std::vector<TensorInfo>& GgufFile::tensors() const { return impl_->parsed.tensors; }
uint64_t GgufFile::data_offset() const { return impl_->parsed.data_offset; }
uint64_t GgufFile::file_size() const { return impl_->bytes.size(); }

void GgufFile::release_pages(const uint8_t* p, size_t n) const { impl_->mapping.release(p, n); }

const Value* GgufFile::find(std::string_view key) const {
  const auto it = impl_->key_index.find(key);
  return it == impl_->key_index.end() ? nullptr : &impl_->parsed.metadata[it->second].value;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = impl_->tensor_index.find(name);
  return it == impl_->tensor_index.end() ? nullptr : &impl_->parsed.tensors[it->second];
}

std::span<const uint8_t> GgufFile::tensor_data(const TensorInfo& t) const {
  // The parser checked every tensor's range; this guards TensorInfos from elsewhere.
  const uint64_t begin = impl_->parsed.data_offset + t.offset;
  if (t.offset > impl_->bytes.size() || begin > impl_->bytes.size() || t.nbytes > impl_->bytes.size() - begin) {
    throw Error(ErrorCode::kInvalidArgument, "tensor '" + t.name + "' is not inside this GGUF file");
  }
  return impl_->bytes.subspan(static_cast<size_t>(begin), static_cast<size_t>(t.nbytes));
}

namespace {

[[noreturn]] void wrong_type(std::string_view key, const Value& v, std::string_view wanted) {
  throw Error(ErrorCode::kCorrupt, "GGUF key '" + std::string(key) + "' has type " +
                                       std::string(value_type_name(v.type)) + ", expected " + std::string(wanted));
}

const Value* find_array(const GgufFile& f, std::string_view key) {
  const Value* v = f.find(key);
  if (v != nullptr && v->type != ValueType::kArray) wrong_type(key, *v, "an array");
  return v;
}

}  // namespace

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  const auto n = v->as_int();
  if (!n) wrong_type(key, *v, "an integer that fits int64");
  return n;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  const auto x = v->as_float();
  if (!x) wrong_type(key, *v, "a number");
  return x;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type != ValueType::kString) wrong_type(key, *v, "a string");
  return v->s;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type != ValueType::kBool) wrong_type(key, *v, "a bool");
  return v->u != 0;
}

std::optional<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  const Value* v = find_array(*this, key);
  if (v == nullptr) return std::nullopt;
  if (v->elem_type != ValueType::kString) wrong_type(key, *v, "an array of strings");
  std::vector<std::string> out;
  out.reserve(v->arr.size());
  for (const Value& e : v->arr) out.push_back(e.s);
  return out;
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const Value* v = find_array(*this, key);
  if (v == nullptr) return std::nullopt;
  std::vector<float> out;
  out.reserve(v->arr.size());
  for (const Value& e : v->arr) {
    const auto x = e.as_float();
    if (!x) wrong_type(key, *v, "an array of numbers");
    // Out-of-range doubles become ±infinity (a plain narrowing cast would be undefined).
    const double lim = std::numeric_limits<float>::max();
    out.push_back(*x > lim ? std::numeric_limits<float>::infinity()
                           : *x < -lim ? -std::numeric_limits<float>::infinity() : static_cast<float>(*x));
  }
  return out;
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const Value* v = find_array(*this, key);
  if (v == nullptr) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(v->arr.size());
  for (const Value& e : v->arr) {
    const auto n = e.as_int();
    if (!n) wrong_type(key, *v, "an array of integers");
    out.push_back(*n);
  }
  return out;
}

}  // namespace vks::gguf
