#include "engine/gguf/gguf_parse.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_set>

#include "engine/common/error.h"

namespace vks::gguf::detail {
namespace {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32

[[noreturn]] void fail(ErrorCode code, const std::string& problem, uint64_t offset) {
  throw Error(code, "GGUF: " + problem + " (at byte offset " + std::to_string(offset) + ")");
}

[[noreturn]] void corrupt(const std::string& problem, uint64_t offset) {
  fail(ErrorCode::kCorrupt, problem, offset);
}

// Names from a hostile file can be long or hold control bytes (a NUL would cut the message short).
std::string quoted(std::string_view s) {
  constexpr size_t kShown = 80;
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (const char ch : s.substr(0, kShown)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F || c == '\\') {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  if (s.size() > kShown) out += "...";
  return out + "'";
}

// What is being read, for error messages. Rendered only when something is wrong: building strings
// for every value of a 100k-token vocabulary would dominate parsing time.
struct What {
  const char* label;
  std::string_view subject = {};  // a key or tensor name, shown quoted
  int64_t index = -1;             // an item number, shown as #index
  const char* suffix = "";

  std::string str() const {
    // append() rather than operator+: GCC 12 reports a false -Wrestrict on "lit" + std::string&&.
    std::string s(label);
    if (subject.data() != nullptr) s.append(" ").append(quoted(subject));
    if (index >= 0) s.append(" #").append(std::to_string(index));
    return s.append(suffix);
  }
};

// A bounds-checked little-endian reader over the file bytes.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  void need(uint64_t n, const What& what) const {
    if (n > remaining()) {
      corrupt("file truncated: " + what.str() + " needs " + std::to_string(n) + " bytes but only " +
                  std::to_string(remaining()) + " remain",
              pos_);
    }
  }

  template <typename T>
  T read(const What& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const What& what) {
    const uint64_t at = pos_;
    What length = what;
    length.suffix = " length";
    const uint64_t len = read<uint64_t>(length);
    if (len > kMaxStringBytes) {
      corrupt(what.str() + " length " + std::to_string(len) + " exceeds the limit of " +
                  std::to_string(kMaxStringBytes) + " bytes",
              at);
    }
    need(len, what);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::kFloat64); }

// Smallest encoding of one element of type t, used to reject element counts that cannot fit.
uint64_t min_encoded_size(ValueType t) {
  switch (t) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kBool: return 1;
    case ValueType::kUint16: case ValueType::kInt16: return 2;
    case ValueType::kUint32: case ValueType::kInt32: case ValueType::kFloat32: return 4;
    case ValueType::kUint64: case ValueType::kInt64: case ValueType::kFloat64: return 8;
    case ValueType::kString: return 8;      // length only
    case ValueType::kArray: return 4 + 8;  // element type + count
  }
  return 1;
}

class Parser {
 public:
  explicit Parser(std::span<const uint8_t> bytes) : c_(bytes) {}

  ParsedGguf run() {
    ParsedGguf out;
    read_header(out);
    const uint64_t n_tensors = read_count({"tensor count"}, 8 + 4 + 8 + 4 + 8);  // smallest tensor info
    const uint64_t n_kv = read_count({"metadata key count"}, 8 + 4 + 1);
    read_metadata(out, n_kv);
    read_tensor_infos(out, n_tensors);
    place_data(out);
    return out;
  }

 private:
  void read_header(ParsedGguf& out) {
    if (c_.size() < 4) corrupt("file too small to be GGUF (" + std::to_string(c_.size()) + " bytes)", 0);
    const uint32_t magic = c_.read<uint32_t>({"magic"});
    if (magic != kMagic) corrupt("bad magic: this is not a GGUF file", 0);
    const uint64_t at = c_.pos();
    const uint32_t version = c_.read<uint32_t>({"version"});
    if (version == 1) {
      fail(ErrorCode::kUnsupported, "GGUF version 1 is not supported (only v2 and v3); re-convert the model with a current llama.cpp", at);
    }
    if (version != 2 && version != 3) {
      if (version == 0x02000000u || version == 0x03000000u) {
        fail(ErrorCode::kUnsupported, "big-endian GGUF files are not supported", at);
      }
      fail(ErrorCode::kUnsupported, "unknown GGUF version " + std::to_string(version) + " (supported: 2, 3)", at);
    }
    out.version = version;
  }

  // A count whose items each take at least min_item_bytes cannot exceed what is left of the file.
  uint64_t read_count(const What& what, uint64_t min_item_bytes) {
    const uint64_t at = c_.pos();
    const uint64_t n = c_.read<uint64_t>(what);
    if (n > c_.remaining() / min_item_bytes) {
      corrupt(what.str() + " " + std::to_string(n) + " cannot fit in the " + std::to_string(c_.remaining()) +
                  " bytes left in the file",
              at);
    }
    return n;
  }

  ValueType read_value_type(const What& what) {
    const uint64_t at = c_.pos();
    const uint32_t t = c_.read<uint32_t>(what);
    if (!valid_value_type(t)) corrupt("unknown " + what.str() + " " + std::to_string(t), at);
    return static_cast<ValueType>(t);
  }

  Value read_value(ValueType type, const std::string& key, uint32_t depth) {
    Value v;
    v.type = type;
    const What what{"value of", key};
    switch (type) {
      case ValueType::kUint8: v.u = c_.read<uint8_t>(what); break;
      case ValueType::kInt8: v.i = c_.read<int8_t>(what); break;
      case ValueType::kUint16: v.u = c_.read<uint16_t>(what); break;
      case ValueType::kInt16: v.i = c_.read<int16_t>(what); break;
      case ValueType::kUint32: v.u = c_.read<uint32_t>(what); break;
      case ValueType::kInt32: v.i = c_.read<int32_t>(what); break;
      case ValueType::kUint64: v.u = c_.read<uint64_t>(what); break;
      case ValueType::kInt64: v.i = c_.read<int64_t>(what); break;
      case ValueType::kFloat32: v.f = c_.read<float>(what); break;
      case ValueType::kFloat64: v.f = c_.read<double>(what); break;
      case ValueType::kBool: v.u = c_.read<uint8_t>(what) != 0 ? 1 : 0; break;
      case ValueType::kString: v.s = c_.read_string(what); break;
      case ValueType::kArray: read_array(v, key, depth); break;
    }
    return v;
  }

  void read_array(Value& v, const std::string& key, uint32_t depth) {
    const uint64_t at = c_.pos();
    if (depth >= kMaxArrayDepth) {
      corrupt("arrays of " + quoted(key) + " nest deeper than " + std::to_string(kMaxArrayDepth) + " levels", at);
    }
    v.elem_type = read_value_type({"array element type of", key});
    const uint64_t n = read_count({"element count of", key}, min_encoded_size(v.elem_type));
    total_array_elements_ += n;
    if (total_array_elements_ > kMaxTotalArrayElements) {
      corrupt("arrays hold more than " + std::to_string(kMaxTotalArrayElements) + " elements in total", at);
    }
    v.arr.reserve(static_cast<size_t>(n));
    for (uint64_t k = 0; k < n; ++k) {
      if (v.elem_type == ValueType::kArray) {
        Value inner;
        inner.type = ValueType::kArray;
        read_array(inner, key, depth + 1);
        v.arr.push_back(std::move(inner));
      } else {
        v.arr.push_back(read_value(v.elem_type, key, depth + 1));
      }
    }
  }

  void read_metadata(ParsedGguf& out, uint64_t n_kv) {
    std::unordered_set<std::string> seen;
    out.metadata.reserve(static_cast<size_t>(n_kv));
    for (uint64_t k = 0; k < n_kv; ++k) {
      const uint64_t at = c_.pos();
      KeyValue kv;
      kv.key = c_.read_string({"metadata key", {}, static_cast<int64_t>(k)});
      if (!seen.insert(kv.key).second) corrupt("duplicate metadata key " + quoted(kv.key), at);
      const ValueType type = read_value_type({"value type of", kv.key});
      kv.value = read_value(type, kv.key, 0);
      if (kv.key == "general.alignment") out.alignment = parse_alignment(kv.value, at);
      out.metadata.push_back(std::move(kv));
    }
  }

  static uint32_t parse_alignment(const Value& v, uint64_t at) {
    const std::optional<int64_t> a = v.as_int();
    if (!a || v.type == ValueType::kBool) corrupt("general.alignment must be an unsigned integer", at);
    if (*a <= 0 || *a > (1 << 30) || !std::has_single_bit(static_cast<uint64_t>(*a))) {
      corrupt("general.alignment " + std::to_string(*a) + " is not a power of two between 1 and 2^30", at);
    }
    return static_cast<uint32_t>(*a);
  }

  void read_tensor_infos(ParsedGguf& out, uint64_t n_tensors) {
    std::unordered_set<std::string> seen;
    out.tensors.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t k = 0; k < n_tensors; ++k) {
      const uint64_t at = c_.pos();
      TensorInfo t;
      t.name = c_.read_string({"name of tensor", {}, static_cast<int64_t>(k)});
      if (t.name.size() >= 64) corrupt("tensor name " + quoted(t.name) + " is longer than ggml's 63-byte limit", at);
      if (!seen.insert(t.name).second) corrupt("duplicate tensor name " + quoted(t.name), at);
      const std::string what = "tensor " + quoted(t.name);

      const uint64_t dims_at = c_.pos();
      const uint32_t n_dims = c_.read<uint32_t>({"dimension count of tensor", t.name});
      if (n_dims == 0 || n_dims > kMaxDims) {
        corrupt(what + " has " + std::to_string(n_dims) + " dimensions (allowed: 1 to 4)", dims_at);
      }
      uint64_t n_elements = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        const uint64_t dim_at = c_.pos();
        const uint64_t dim = c_.read<uint64_t>({"dimension of tensor", t.name});
        if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim) {
          corrupt(what + " has an invalid dimension " + std::to_string(dim) + " (zero or element count overflows)", dim_at);
        }
        n_elements *= dim;
        t.dims.push_back(dim);
      }

      const uint64_t type_at = c_.pos();
      const uint32_t type_id = c_.read<uint32_t>({"type of tensor", t.name});
      const auto traits = ggml_type_traits(type_id);
      if (!traits) fail(ErrorCode::kUnsupported, what + " has unknown ggml type id " + std::to_string(type_id), type_at);
      t.type = static_cast<GgmlType>(type_id);
      if (t.dims[0] % traits->block_size != 0) {
        corrupt(what + " row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
                    std::string(traits->name) + " block size " + std::to_string(traits->block_size),
                type_at);
      }
      // n_elements <= 2^63 and type_size <= 292 per block of >= 1 element: compute per block.
      const uint64_t n_blocks = n_elements / traits->block_size;
      if (n_blocks > std::numeric_limits<uint64_t>::max() / traits->type_size) {
        corrupt(what + " byte size overflows", type_at);
      }
      t.nbytes = n_blocks * traits->type_size;

      const uint64_t offset_at = c_.pos();
      t.offset = c_.read<uint64_t>({"data offset of tensor", t.name});
      if (t.offset % out.alignment != 0) {
        corrupt(what + " data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                    std::to_string(out.alignment),
                offset_at);
      }
      tensor_info_offsets_.push_back(at);
      out.tensors.push_back(std::move(t));
    }
  }

  void place_data(ParsedGguf& out) {
    const uint64_t header_end = c_.pos();
    const uint64_t pad = (out.alignment - header_end % out.alignment) % out.alignment;
    out.data_offset = header_end + pad;  // header_end <= file size < 2^63: cannot overflow
    if (out.tensors.empty()) return;     // vocabulary-only files may end right after the header
    if (out.data_offset > c_.size()) {
      corrupt("file truncated: the tensor data section starts past the end of the file", header_end);
    }
    const uint64_t data_bytes = c_.size() - out.data_offset;
    std::vector<size_t> order(out.tensors.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    for (size_t k : order) {
      const TensorInfo& t = out.tensors[k];
      if (t.offset > data_bytes || t.nbytes > data_bytes - t.offset) {
        corrupt("tensor " + quoted(t.name) + " data [" + std::to_string(out.data_offset + t.offset) + ", +" +
                    std::to_string(t.nbytes) + ") extends past the end of the file (" + std::to_string(c_.size()) +
                    " bytes)",
                tensor_info_offsets_[k]);
      }
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out.tensors[a].offset < out.tensors[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& prev = out.tensors[order[k - 1]];
      const TensorInfo& cur = out.tensors[order[k]];
      if (cur.offset < prev.offset + prev.nbytes) {
        corrupt("tensor " + quoted(cur.name) + " data overlaps tensor " + quoted(prev.name), tensor_info_offsets_[order[k]]);
      }
    }
  }

  Cursor c_;
  uint64_t total_array_elements_ = 0;
  std::vector<uint64_t> tensor_info_offsets_;  // where each tensor's info starts, for messages
};

}  // namespace

ParsedGguf parse_gguf(std::span<const uint8_t> bytes) { return Parser(bytes).run(); }

}  // namespace vks::gguf::detail
