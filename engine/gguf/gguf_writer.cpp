#include "engine/gguf/gguf_writer.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "engine/common/error.h"

namespace vks::gguf {
namespace {

Value scalar(ValueType t) {
  Value v;
  v.type = t;
  return v;
}

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorCode::kInvalidArgument, "GgufWriter: " + message); }

class Bytes {
 public:
  template <typename T>
  void put(T v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void put_value(const Value& v, const std::string& key) {
    switch (v.type) {
      case ValueType::kUint8: put<uint8_t>(static_cast<uint8_t>(v.u)); break;
      case ValueType::kInt8: put<int8_t>(static_cast<int8_t>(v.i)); break;
      case ValueType::kUint16: put<uint16_t>(static_cast<uint16_t>(v.u)); break;
      case ValueType::kInt16: put<int16_t>(static_cast<int16_t>(v.i)); break;
      case ValueType::kUint32: put<uint32_t>(static_cast<uint32_t>(v.u)); break;
      case ValueType::kInt32: put<int32_t>(static_cast<int32_t>(v.i)); break;
      case ValueType::kUint64: put<uint64_t>(v.u); break;
      case ValueType::kInt64: put<int64_t>(v.i); break;
      case ValueType::kFloat32: put<float>(static_cast<float>(v.f)); break;
      case ValueType::kFloat64: put<double>(v.f); break;
      case ValueType::kBool: put<uint8_t>(v.u != 0 ? 1 : 0); break;
      case ValueType::kString: put_string(v.s); break;
      case ValueType::kArray:
        put<uint32_t>(static_cast<uint32_t>(v.elem_type));
        put<uint64_t>(v.arr.size());
        for (const Value& e : v.arr) {
          if (e.type != v.elem_type) invalid("array '" + key + "' mixes element types");
          put_value(e, key);
        }
        break;
    }
  }
  void pad_to(uint32_t alignment) { out_.resize((out_.size() + alignment - 1) / alignment * alignment, 0); }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

uint64_t align_up(uint64_t n, uint32_t alignment) { return (n + alignment - 1) / alignment * alignment; }

}  // namespace

Value make_uint8(uint8_t v) { Value x = scalar(ValueType::kUint8); x.u = v; return x; }
Value make_int8(int8_t v) { Value x = scalar(ValueType::kInt8); x.i = v; return x; }
Value make_uint16(uint16_t v) { Value x = scalar(ValueType::kUint16); x.u = v; return x; }
Value make_int16(int16_t v) { Value x = scalar(ValueType::kInt16); x.i = v; return x; }
Value make_uint32(uint32_t v) { Value x = scalar(ValueType::kUint32); x.u = v; return x; }
Value make_int32(int32_t v) { Value x = scalar(ValueType::kInt32); x.i = v; return x; }
Value make_uint64(uint64_t v) { Value x = scalar(ValueType::kUint64); x.u = v; return x; }
Value make_int64(int64_t v) { Value x = scalar(ValueType::kInt64); x.i = v; return x; }
Value make_float32(float v) { Value x = scalar(ValueType::kFloat32); x.f = v; return x; }
Value make_float64(double v) { Value x = scalar(ValueType::kFloat64); x.f = v; return x; }
Value make_bool(bool v) { Value x = scalar(ValueType::kBool); x.u = v ? 1 : 0; return x; }
Value make_string(std::string v) { Value x = scalar(ValueType::kString); x.s = std::move(v); return x; }

Value make_array(ValueType elem_type, std::vector<Value> elems) {
  Value x = scalar(ValueType::kArray);
  x.elem_type = elem_type;
  x.arr = std::move(elems);
  return x;
}

Value make_string_array(const std::vector<std::string>& v) {
  std::vector<Value> elems;
  elems.reserve(v.size());
  for (const std::string& s : v) elems.push_back(make_string(s));
  return make_array(ValueType::kString, std::move(elems));
}

Value make_float32_array(const std::vector<float>& v) {
  std::vector<Value> elems;
  elems.reserve(v.size());
  for (float f : v) elems.push_back(make_float32(f));
  return make_array(ValueType::kFloat32, std::move(elems));
}

Value make_int32_array(const std::vector<int32_t>& v) {
  std::vector<Value> elems;
  elems.reserve(v.size());
  for (int32_t n : v) elems.push_back(make_int32(n));
  return make_array(ValueType::kInt32, std::move(elems));
}

GgufWriter::GgufWriter(uint32_t version) : version_(version) {
  if (version != 2 && version != 3) invalid("only GGUF versions 2 and 3 can be written");
}

void GgufWriter::set_alignment(uint32_t alignment) {
  if (alignment == 0 || !std::has_single_bit(alignment)) invalid("alignment must be a power of two");
  if (!tensors_.empty()) invalid("set the alignment before adding tensors");
  alignment_ = alignment;
  set("general.alignment", make_uint32(alignment));
}

void GgufWriter::set(const std::string& key, Value value) {
  for (KeyValue& kv : metadata_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  metadata_.push_back({key, std::move(value)});
}

void GgufWriter::remove(const std::string& key) {
  std::erase_if(metadata_, [&](const KeyValue& kv) { return kv.key == key; });
}

const TensorInfo& GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> dims) {
  for (const TensorInfo& t : tensors_) {
    if (t.name == name) invalid("duplicate tensor '" + name + "'");
  }
  const auto traits = ggml_type_traits(static_cast<uint32_t>(type));
  if (!traits) invalid("tensor '" + name + "' has an unknown type");
  if (dims.empty() || dims.size() > 4) invalid("tensor '" + name + "' must have 1 to 4 dimensions");
  if (std::find(dims.begin(), dims.end(), 0u) != dims.end()) invalid("tensor '" + name + "' has a zero dimension");
  if (dims[0] % traits->block_size != 0) {
    invalid("tensor '" + name + "': row length " + std::to_string(dims[0]) + " is not a multiple of the " +
            std::string(traits->name) + " block size " + std::to_string(traits->block_size));
  }
  TensorInfo t;
  t.name = name;
  t.type = type;
  t.dims = std::move(dims);
  t.nbytes = t.n_elements() / traits->block_size * traits->type_size;
  t.offset = next_offset_;
  next_offset_ = align_up(t.offset + t.nbytes, alignment_);
  tensors_.push_back(std::move(t));
  return tensors_.back();
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
  Bytes b;
  b.put<uint32_t>(0x46554747);  // "GGUF"
  b.put<uint32_t>(version_);
  b.put<uint64_t>(tensors_.size());
  b.put<uint64_t>(metadata_.size());
  for (const KeyValue& kv : metadata_) {
    b.put_string(kv.key);
    b.put<uint32_t>(static_cast<uint32_t>(kv.value.type));
    b.put_value(kv.value, kv.key);
  }
  for (const TensorInfo& t : tensors_) {
    b.put_string(t.name);
    b.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) b.put<uint64_t>(d);
    b.put<uint32_t>(static_cast<uint32_t>(t.type));
    b.put<uint64_t>(t.offset);
  }
  b.pad_to(alignment_);
  return b.take();
}

uint64_t GgufWriter::file_size() const {
  const uint64_t header = header_bytes().size();
  if (tensors_.empty()) return header;
  return header + tensors_.back().offset + tensors_.back().nbytes;
}

std::vector<uint8_t> GgufWriter::to_bytes(const std::vector<std::vector<uint8_t>>& data) const {
  if (data.size() != tensors_.size()) invalid("to_bytes needs one data buffer per tensor");
  std::vector<uint8_t> out = header_bytes();
  const uint64_t base = out.size();
  for (size_t k = 0; k < tensors_.size(); ++k) {
    if (data[k].size() != tensors_[k].nbytes) {
      invalid("tensor '" + tensors_[k].name + "' needs " + std::to_string(tensors_[k].nbytes) + " bytes, got " +
              std::to_string(data[k].size()));
    }
    out.resize(base + tensors_[k].offset, 0);
    out.insert(out.end(), data[k].begin(), data[k].end());
  }
  return out;
}

GgufFileSink::GgufFileSink(const GgufWriter& writer, const std::string& path)
    : tensors_(writer.tensors()), alignment_(writer.alignment()), path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) throw Error(ErrorCode::kIo, path + ": cannot create: " + std::strerror(errno));
  const std::vector<uint8_t> header = writer.header_bytes();
  data_offset_ = header.size();
  put(header.data(), header.size());
}

GgufFileSink::~GgufFileSink() {
  if (file_ != nullptr) std::fclose(file_);
}

void GgufFileSink::put(const void* data, size_t n) {
  if (n != 0 && std::fwrite(data, 1, n, file_) != n) {
    throw Error(ErrorCode::kIo, path_ + ": write failed: " + std::strerror(errno));
  }
  written_ += n;
}

void GgufFileSink::pad_to_alignment() {
  static const uint8_t zeros[256] = {};
  uint64_t pad = align_up(written_, alignment_) - written_;
  while (pad > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, sizeof(zeros)));
    put(zeros, n);
    pad -= n;
  }
}

void GgufFileSink::write(std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    if (tensor_ >= tensors_.size()) invalid(path_ + ": more tensor data than the declared tensors hold");
    const TensorInfo& t = tensors_[tensor_];
    if (tensor_written_ == 0) pad_to_alignment();
    const uint64_t n = std::min<uint64_t>(bytes.size(), t.nbytes - tensor_written_);
    put(bytes.data(), static_cast<size_t>(n));
    tensor_written_ += n;
    bytes = bytes.subspan(static_cast<size_t>(n));
    if (tensor_written_ == t.nbytes) {
      ++tensor_;
      tensor_written_ = 0;
    }
  }
}

void GgufFileSink::finish() {
  if (tensor_ != tensors_.size()) {
    invalid(path_ + ": finish() before all tensor data was written (tensor '" + tensors_[tensor_].name + "')");
  }
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) throw Error(ErrorCode::kIo, path_ + ": close failed: " + std::strerror(errno));
}

void write_gguf_file(const GgufWriter& writer, const std::vector<std::vector<uint8_t>>& data, const std::string& path) {
  if (data.size() != writer.tensors().size()) invalid("write_gguf_file needs one data buffer per tensor");
  GgufFileSink sink(writer, path);
  for (size_t k = 0; k < data.size(); ++k) {
    if (data[k].size() != writer.tensors()[k].nbytes) {
      invalid("tensor '" + writer.tensors()[k].name + "' needs " + std::to_string(writer.tensors()[k].nbytes) +
              " bytes, got " + std::to_string(data[k].size()));
    }
    sink.write(data[k]);
  }
  sink.finish();
}

}  // namespace vks::gguf
