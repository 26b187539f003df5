#include "engine/cpu/cpu_weights.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/cpu/quant/packed_rows.h"
#include "engine/gguf/file_residence.h"

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

CpuWeights::CpuWeights(const LlamaModel& model, bool in_memory, bool pack, cpuq::CpuIsa isa, ThreadPool* pool)
    : weights_(model.weights()) {
  if (!in_memory) {
    residence_.why_not = "on request";
    return;
  }
  std::vector<Matrix> matrices = matrices_to_copy(model.config(), weights_);
  // One copy per distinct mapping (data pointer and size): its offset, and whether it is packed
  // (only if every view of it may be).
  struct Copy {
    const TensorRef* source;
    size_t offset;
    bool packed;
  };
  std::vector<Copy> copies;
  std::map<std::pair<const uint8_t*, uint64_t>, size_t> copy_of;
  size_t bytes = 0;
  for (const Matrix& m : matrices) {
    const auto [at, first] = copy_of.emplace(std::pair{m.ref->data, m.ref->nbytes}, copies.size());
    if (first) {
      copies.push_back({m.ref, bytes, pack});
      bytes += align_up(m.ref->nbytes);
    }
    copies[at->second].packed = copies[at->second].packed && packable(m, isa);
  }
  residence_.why_not = gguf::memory_shortfall(bytes);
  if (!residence_.why_not.empty()) return;
  memory_ = static_cast<uint8_t*>(gguf::map_huge_page_memory(bytes, &residence_.huge_pages));
  if (memory_ == nullptr) {
    residence_.why_not = std::string("cannot allocate: ") + std::strerror(errno);
    return;
  }
  memory_bytes_ = bytes;
  // Matrix by matrix over the pool (packing is a byte shuffle: a 1 GB file took seconds on one
  // thread); each source's pages are given back once copied, so the file's pages do not stay
  // resident beside the copy. The views are redirected to the copy only after.
  const auto copy_one = [&](size_t i) {
    const TensorRef& source = *copies[i].source;
    if (copies[i].packed) {
      cpuq::pack_rows16(source, memory_ + copies[i].offset);
    } else {
      std::memcpy(memory_ + copies[i].offset, source.data, source.nbytes);
    }
    model.file().release_pages(source.data, source.nbytes);
  };
  if (pool != nullptr) {
    pool->parallel_for(copies.size(), copy_one);
  } else {
    for (size_t i = 0; i < copies.size(); ++i) copy_one(i);
  }
  for (Matrix& m : matrices) {
    const Copy& c = copies[copy_of.at({m.ref->data, m.ref->nbytes})];
    m.ref->data = memory_ + c.offset;
    if (c.packed) m.ref->layout = WeightLayout::kRows16;
  }
  for (const Copy& c : copies) packed_ += c.packed ? 1 : 0;
  mprotect(memory_, bytes, PROT_READ);  // read-only from here on, as the mapping was
  residence_.copied = true;
}

CpuWeights::~CpuWeights() {
  if (memory_ != nullptr) munmap(memory_, memory_bytes_);
}

}  // namespace vks
