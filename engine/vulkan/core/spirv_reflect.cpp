// Just enough SPIR-V parsing to know what a compute shader declares: its storage-buffer and
// uniform-texel-buffer bindings, the size of its push-constant block and its local size.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "engine/common/error.h"
#include "engine/vulkan/core/kernel.h"

namespace vks::vk {
namespace {

constexpr uint32_t kMagic = 0x07230203;
enum Op : uint32_t {
  kOpExecutionMode = 16, kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23, kOpTypeMatrix = 24,
  kOpTypeImage = 25, kOpTypeSampledImage = 27, kOpTypeArray = 28, kOpTypeStruct = 30, kOpTypePointer = 32,
  kOpConstant = 43, kOpVariable = 59,
  kOpDecorate = 71, kOpMemberDecorate = 72, kOpExecutionModeId = 331,
};
constexpr uint32_t kDecorationBinding = 33, kDecorationDescriptorSet = 34, kDecorationOffset = 35,
                   kDecorationArrayStride = 6, kDecorationMatrixStride = 7;
constexpr uint32_t kStorageUniformConstant = 0, kStorageUniform = 2, kStoragePushConstant = 9, kStorageStorageBuffer = 12;
constexpr uint32_t kModeLocalSize = 17, kModeLocalSizeId = 38;
constexpr uint32_t kDimBuffer = 5, kImageSampled = 1;

[[noreturn]] void fail(const std::string& what) { throw Error(ErrorCode::kInternal, "SPIR-V reflection: " + what); }

struct Module {
  std::map<uint32_t, std::vector<uint32_t>> types;  // id -> instruction words (opcode first)
  std::map<uint32_t, uint32_t> constants;           // id -> 32-bit value
  std::map<uint32_t, uint32_t> array_stride;
  std::map<uint32_t, uint32_t> matrix_stride;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> member_offset;  // (struct, member) -> offset
  std::map<uint32_t, uint32_t> binding, set;                        // variable id -> decoration
};

uint64_t type_size(const Module& m, uint32_t id, int depth = 0) {
  if (depth > 16) fail("type nesting too deep");
  auto it = m.types.find(id);
  if (it == m.types.end()) fail("unknown type id " + std::to_string(id));
  const std::vector<uint32_t>& t = it->second;
  switch (t[0]) {
    case kOpTypeInt:
    case kOpTypeFloat:
      if (t.size() < 3) fail("bad scalar type");
      return t[2] / 8;
    case kOpTypeVector:
      if (t.size() < 4) fail("bad vector type");
      return type_size(m, t[2], depth + 1) * t[3];
    case kOpTypeMatrix: {
      if (t.size() < 4) fail("bad matrix type");
      auto s = m.matrix_stride.find(id);
      return (s != m.matrix_stride.end() ? s->second : type_size(m, t[2], depth + 1)) * t[3];
    }
    case kOpTypeArray: {
      if (t.size() < 4) fail("bad array type");
      auto len = m.constants.find(t[3]);
      if (len == m.constants.end()) fail("array length is not a plain constant");
      auto s = m.array_stride.find(id);
      const uint64_t stride = s != m.array_stride.end() ? s->second : type_size(m, t[2], depth + 1);
      return stride * len->second;
    }
    case kOpTypeStruct: {
      uint64_t size = 0;
      for (uint32_t member = 0; member + 2 < t.size(); ++member) {
        auto off = m.member_offset.find({id, member});
        if (off == m.member_offset.end()) fail("struct member without Offset");
        size = std::max<uint64_t>(size, off->second + type_size(m, t[2 + member], depth + 1));
      }
      return size;
    }
    default:
      fail("unsupported type opcode " + std::to_string(t[0]) + " in a push-constant block");
  }
}

// A UniformConstant variable whose type is a sampled image of dimension Buffer with 32-bit unsigned
// texels: a usamplerBuffer.
bool is_uniform_texel_buffer(const Module& m, const std::map<uint32_t, std::pair<uint32_t, uint32_t>>& pointers,
                             uint32_t pointer_type) {
  auto p = pointers.find(pointer_type);
  if (p == pointers.end()) return false;
  auto sampled = m.types.find(p->second.second);
  if (sampled == m.types.end() || sampled->second[0] != kOpTypeSampledImage || sampled->second.size() < 3) return false;
  auto image = m.types.find(sampled->second[2]);
  // OpTypeImage: result, sampled type, Dim, Depth, Arrayed, MS, Sampled, format
  if (image == m.types.end() || image->second[0] != kOpTypeImage || image->second.size() < 9) return false;
  if (image->second[3] != kDimBuffer || image->second[7] != kImageSampled) return false;
  // A usamplerBuffer: the view's texels are R32G32B32A32_UINT (OpTypeInt: width 32, signedness 0).
  auto texel = m.types.find(image->second[2]);
  return texel != m.types.end() && texel->second[0] == kOpTypeInt && texel->second.size() >= 4 &&
         texel->second[2] == 32 && texel->second[3] == 0;
}

}  // namespace

KernelLayout reflect_spirv(std::span<const uint32_t> words) {
  if (words.size() < 5 || words[0] != kMagic) fail("not a SPIR-V module");
  Module m;
  KernelLayout layout;
  bool have_local_size = false;
  struct Var { uint32_t id, pointer_type, storage; };
  std::vector<Var> vars;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> pointers;  // id -> (storage class, pointee)
  for (size_t i = 5; i < words.size();) {
    const uint32_t count = words[i] >> 16;
    const uint32_t op = words[i] & 0xffff;
    if (count == 0 || i + count > words.size()) fail("truncated instruction at word " + std::to_string(i));
    const uint32_t* w = &words[i];
    switch (op) {
      case kOpExecutionMode:
        if (count >= 6 && w[2] == kModeLocalSize) {
          layout.local_size[0] = w[3];
          layout.local_size[1] = w[4];
          layout.local_size[2] = w[5];
          have_local_size = true;
        } else if (count >= 3 && w[2] == kModeLocalSizeId) {
          fail("LocalSizeId (specialization-constant local size) is not supported");
        }
        break;
      case kOpExecutionModeId:
        if (count >= 3 && w[2] == kModeLocalSizeId) fail("LocalSizeId is not supported");
        break;
      case kOpTypeInt: case kOpTypeFloat: case kOpTypeVector: case kOpTypeMatrix:
      case kOpTypeArray: case kOpTypeStruct: case kOpTypeImage: case kOpTypeSampledImage:
        if (count >= 2) {
          std::vector<uint32_t> t(w, w + count);
          t[0] = op;  // first word keeps only the opcode
          m.types[w[1]] = std::move(t);
        }
        break;
      case kOpTypePointer:
        if (count >= 4) pointers[w[1]] = {w[2], w[3]};
        break;
      case kOpConstant:
        if (count >= 4) m.constants[w[2]] = w[3];
        break;
      case kOpVariable:
        if (count >= 4) vars.push_back({w[2], w[1], w[3]});
        break;
      case kOpDecorate:
        if (count >= 4) {
          if (w[2] == kDecorationBinding) m.binding[w[1]] = w[3];
          if (w[2] == kDecorationDescriptorSet) m.set[w[1]] = w[3];
          if (w[2] == kDecorationArrayStride) m.array_stride[w[1]] = w[3];
        }
        break;
      case kOpMemberDecorate:
        if (count >= 5) {
          if (w[3] == kDecorationOffset) m.member_offset[{w[1], w[2]}] = w[4];
          if (w[3] == kDecorationMatrixStride) m.matrix_stride[w[1]] = w[4];  // approximation: per struct
        }
        break;
      default:
        break;
    }
    i += count;
  }
  if (!have_local_size) fail("no LocalSize execution mode");
  std::set<uint32_t> bindings;
  for (const Var& v : vars) {
    if (v.storage == kStoragePushConstant) {
      auto p = pointers.find(v.pointer_type);
      if (p == pointers.end()) fail("push-constant variable without pointer type");
      layout.push_size = static_cast<uint32_t>(type_size(m, p->second.second));
      continue;
    }
    const bool is_resource = v.storage == kStorageStorageBuffer || v.storage == kStorageUniform ||
                             v.storage == kStorageUniformConstant;
    if (!is_resource) continue;
    const bool texel = v.storage == kStorageUniformConstant && is_uniform_texel_buffer(m, pointers, v.pointer_type);
    if (v.storage != kStorageStorageBuffer && !texel) {
      fail("only storage buffers and uniform texel buffers (usamplerBuffer) are supported as bindings");
    }
    auto set = m.set.find(v.id);
    auto binding = m.binding.find(v.id);
    if (set == m.set.end() || binding == m.binding.end()) fail("binding without set/binding decoration");
    if (set->second != 0) fail("descriptor set " + std::to_string(set->second) + " (only set 0 is supported)");
    if (binding->second >= kMaxKernelBindings) fail("binding " + std::to_string(binding->second) + " out of range");
    if (!bindings.insert(binding->second).second) fail("binding " + std::to_string(binding->second) + " declared twice");
    if (texel) layout.texel_bindings |= 1u << binding->second;
  }
  layout.bindings = static_cast<uint32_t>(bindings.size());
  if (!bindings.empty() && *bindings.rbegin() != layout.bindings - 1) fail("bindings are not dense 0..n-1");
  if (layout.bindings > kMaxKernelBindings) fail("more than " + std::to_string(kMaxKernelBindings) + " bindings");
  return layout;
}

}  // namespace vks::vk
