#include "engine/cpu/quant/packed_rows.h"

#include "engine/common/error.h"

namespace vks::cpuq {

// Not written yet: no level packs, so the CPU runner keeps every matrix in its GGUF layout.
bool packs_rows16(GgmlType, CpuIsa) { return false; }

void pack_rows16(const TensorRef& w, uint8_t*) {
  throw Error(ErrorCode::kInvalidArgument, "tensor '" + w.name + "': no packed layout is implemented");
}

void unpack_rows16(const TensorRef& packed, uint8_t*) {
  throw Error(ErrorCode::kInvalidArgument, "tensor '" + packed.name + "': no packed layout is implemented");
}

}  // namespace vks::cpuq
