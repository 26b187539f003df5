#pragma once
// The weights CpuRunner reads: the model's, with every matrix a step streams (step_matrices) copied
// once, at load, into anonymous memory with transparent huge pages, and packed on the way where the
// kernel level reads a layout of its own (engine/cpu/quant/packed_rows.h: from the avx512vnni level
// on, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, IQ4_NL, Q4_K, Q5_K and Q6_K). Decode streams every weight once
// per step: from a file's 4 KiB pages it ran at 0.5-0.65x the speed (gguf/file_residence.h). The
// model's own weights are left as they are (the tests' float oracle, or another runner, may read
// them); the process gives back its pages of the copied matrices' bytes in the file
// (gguf::GgufFile::release_pages), so memory holds the matrices once.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/isa.h"
#include "engine/model/llama_model.h"

namespace vks {

// Where CpuWeights' matrices live, for the log.
struct WeightsResidence {
  bool copied = false;      // a copy lives in anonymous memory
  bool huge_pages = false;  // transparent huge pages were requested for it (madvise accepted)
  std::string why_not;      // when !copied: the reason
};

class CpuWeights {
 public:
  // in_memory false, or no room for the copy: the model's weights as they are, read from the
  // mapped file (residence() says why). pack: pack what `isa`'s kernels read packed. The copy is
  // made on pool's threads (null: this one).
  CpuWeights(const LlamaModel& model, bool in_memory, bool pack, cpuq::CpuIsa isa, ThreadPool* pool = nullptr);
  ~CpuWeights();
  CpuWeights(const CpuWeights&) = delete;  // weights_ points into memory_
  CpuWeights& operator=(const CpuWeights&) = delete;

  const LlamaWeights& weights() const { return weights_; }
  const WeightsResidence& residence() const { return residence_; }
  // The matrices held in WeightLayout::kRows16.
  size_t packed_matrices() const { return packed_; }

 private:
  LlamaWeights weights_;
  WeightsResidence residence_;
  uint8_t* memory_ = nullptr;
  size_t memory_bytes_ = 0;
  size_t packed_ = 0;
};

}  // namespace vks
