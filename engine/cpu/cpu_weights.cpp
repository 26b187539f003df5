#include "engine/cpu/cpu_weights.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/cpu/quant/packed_rows.h"

namespace vks {
namespace {

constexpr size_t kAlign = 64;  // each matrix starts on a cache line (the kernels' aligned loads)

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The copy's matrices: the step's, each distinct mapping once (Gemma 4's V that is its K, a tied
// output beside nothing else), with the rows the layer slices them by where it does (a layer's
// experts: gate and up by the expert's rows, down by dim), 0 where it reads them whole.
struct Matrix {
  TensorRef* ref;
  uint64_t slice_rows;
};

std::vector<Matrix> matrices_to_copy(const LlamaConfig& c, LlamaWeights& w) {
  std::vector<Matrix> out;
  for (const TensorRef* m : step_matrices(w)) out.push_back({const_cast<TensorRef*>(m), 0});  // w is ours
  for (size_t l = 0; l < w.layers.size(); ++l) {
    if (!c.layers[l].ffn.routed()) continue;
    for (Matrix& m : out) {
      const LayerWeights& layer = w.layers[l];
      if (m.ref == &layer.w_gate || m.ref == &layer.w_up) m.slice_rows = c.layers[l].ffn.hidden;
      if (m.ref == &layer.w_down) m.slice_rows = c.dim;
    }
  }
  return out;
}

bool packable(const Matrix& m, cpuq::CpuIsa isa) {
  return cpuq::packs_rows16(m.ref->type, isa) && m.ref->rows % kRows16Group == 0 &&
         m.slice_rows % kRows16Group == 0;
}

}  // namespace

CpuWeights::CpuWeights(const LlamaModel& model, bool in_memory, bool pack, cpuq::CpuIsa isa)
    : weights_(model.weights()) {
  if (!in_memory) {
    residence_.why_not = "on request";
    return;
  }
  std::vector<Matrix> matrices = matrices_to_copy(model.config(), weights_);
  // Offsets in the copy, one per distinct mapping (data pointer and size).
  std::map<std::pair<const uint8_t*, uint64_t>, size_t> offset_of;
  size_t bytes = 0;
  for (const Matrix& m : matrices) {
    if (offset_of.emplace(std::pair{m.ref->data, m.ref->nbytes}, bytes).second) bytes += align_up(m.ref->nbytes);
  }
  residence_.why_not = gguf::memory_shortfall(bytes);
  if (!residence_.why_not.empty()) return;
  memory_ = static_cast<uint8_t*>(gguf::map_huge_page_memory(bytes, &residence_.huge_pages));
  if (memory_ == nullptr) {
    residence_.why_not = std::string("cannot allocate: ") + std::strerror(errno);
    return;
  }
  memory_bytes_ = bytes;
  std::map<size_t, bool> written;  // offset -> packed
  for (Matrix& m : matrices) {
    const size_t offset = offset_of.at({m.ref->data, m.ref->nbytes});
    auto [at, first] = written.emplace(offset, pack && packable(m, isa));
    if (first) {
      if (at->second) {
        cpuq::pack_rows16(*m.ref, memory_ + offset);
        ++packed_;
      } else {
        std::memcpy(memory_ + offset, m.ref->data, m.ref->nbytes);
      }
      ++copied_;
    }
    m.ref->data = memory_ + offset;
    if (at->second) m.ref->layout = WeightLayout::kRows16;
  }
  mprotect(memory_, bytes, PROT_READ);  // read-only from here on, as the mapping was
  residence_.moved = true;
}

CpuWeights::~CpuWeights() {
  if (memory_ != nullptr) munmap(memory_, memory_bytes_);
}

}  // namespace vks
