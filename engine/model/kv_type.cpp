#include "engine/model/kv_type.h"

#include <string>

#include "engine/common/error.h"

namespace vks {

KvType parse_kv_type(std::string_view name) {
  if (name == "f16") return KvType::kF16;
  if (name == "q8_0") return KvType::kQ8_0;
  if (name == "q4_0") return KvType::kQ4_0;
  throw Error(ErrorCode::kInvalidArgument, "KV cache type must be f16, q8_0 or q4_0, not '" + std::string(name) + "'");
}

std::string_view kv_type_name(KvType type) {
  switch (type) {
    case KvType::kQ8_0: return "q8_0";
    case KvType::kQ4_0: return "q4_0";
    case KvType::kF16: break;
  }
  return "f16";
}

uint32_t kv_block_values(KvType type) { return type == KvType::kF16 ? 1 : 32; }

void require_kv_type_fits(const LlamaConfig& config, KvType type) {
  const uint32_t block = kv_block_values(type);
  for (const LayerSpec& l : config.layers) {
    if (l.attention.head_dim % block != 0) {
      throw Error(ErrorCode::kUnsupported, "a " + std::string(kv_type_name(type)) +
                                               " KV cache needs head sizes that are multiples of " +
                                               std::to_string(block) + "; this model has " +
                                               std::to_string(l.attention.head_dim) + " (use f16)");
    }
  }
}

uint64_t kv_row_bytes(KvType type, uint64_t kv_dim) {
  // The scales are f32 (attn_params.h says why).
  return kv_plane_bytes(type, kv_dim) + (type == KvType::kF16 ? 0 : kv_dim / kv_block_values(type) * 4);
}

}  // namespace vks
