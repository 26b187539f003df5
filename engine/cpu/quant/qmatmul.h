#pragma once
// Quantized matrix products for the CPU backend: weights stay in their GGUF blocks, activations are
// quantized per block (act_quant.h) and each block's products are integer dot products (SSSE3/AVX
// maddubs, AVX2), chosen at run time by CPU features (isa.h).
//
// Batch invariance: y[t][r] depends only on W[r] and x[t] and the ISA level's convention (kernels.h),
// never on n_tokens or the thread count. Prefill runs the same per-token arithmetic
// with each weight block loaded once for several tokens.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/cpu/quant/isa.h"
#include "engine/model/llama_model.h"

namespace vks {
class ThreadPool;
}

namespace vks::cpuq {

// ref::matmul's contract: y[t][r] = W[r] · x[t]; W is [rows, cols] in its GGUF type, x is
// [n_tokens, cols], y is [n_tokens, rows]. Rows are spread over the pool's threads (pool may be
// null: single-threaded). Quantized types with an integer kernel (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q2_K..Q6_K, MXFP4, IQ4_NL, IQ4_XS) use it; every other type with a dequantizer (F32, F16, BF16, and any type
// added to the table later) is dequantized chunk by chunk and dotted in floats in ref::dot's order.
// Throws vks::Error for a type without a dequantizer or cols not a multiple of its block size, and
// for a matrix in WeightLayout::kRows16 (packed_rows.h) at a level that cannot read it (below amx)
// or sliced other than at whole groups of 16 rows (MatmulJob::first_row, rows).
void qmatmul(const TensorRef& w, const float* x, size_t n_tokens, float* y, ThreadPool* pool);
// The same at a given ISA level (tests and benches compare levels); a level above detected_isa()
// is lowered to it.
void qmatmul(const TensorRef& w, const float* x, size_t n_tokens, float* y, ThreadPool* pool, CpuIsa isa);

// The quantized activations of one call, kept between calls so that none allocates once the
// largest batch has been seen. The overloads without one use a buffer per calling thread.
class QmatmulScratch {
 public:
  uint8_t* reserve(size_t bytes);  // 64-byte aligned, grown as needed, contents unspecified

 private:
  struct alignas(64) Line {
    unsigned char bytes[64];
  };
  std::vector<Line> lines_;
};
void qmatmul(const TensorRef& w, const float* x, size_t n_tokens, float* y, ThreadPool* pool, CpuIsa isa,
             QmatmulScratch& scratch);

// One product of a multi-job call: y[t][r] = W[first_row + r] · x[t] for r < rows, t < n_tokens;
// x is [n_tokens, w->cols], y is [n_tokens, rows]. A slice of rows is how one expert of a stacked
// ffn_*_exps matrix is named without copying its TensorRef.
struct MatmulJob {
  const TensorRef* w = nullptr;
  uint64_t first_row = 0;
  uint64_t rows = 0;
  const float* x = nullptr;
  size_t n_tokens = 0;
  float* y = nullptr;
};

// Several products in one pool dispatch (and one more to quantize their activations when they are
// many, and one to prepare the tiles of kernels that read a layout of their own, kernels.h, when
// there are several): the work items of every job (kQmatmulRowsPerItem rows x up to 64 tokens; a
// one-token job's are guided, longer first) form one list that the threads claim from, so a layer's
// experts cost one dispatch per matrix instead of one per expert and matrix. Each y[t][r] is
// computed by the kernel, with the activations, that qmatmul of that job alone would use: the same
// bits. A job that reads the same x (pointer and n_tokens) with the same activation blocks as the
// job before it shares its quantized activations (gate and up of one expert), and their prepared
// tiles where it can. Jobs with no tokens or no rows are skipped; every job is checked before any
// runs (qmatmul's errors). Not reentrant per thread (it keeps its bookkeeping in a per-thread
// buffer).
void qmatmul_jobs(const MatmulJob* jobs, size_t n_jobs, ThreadPool* pool);
void qmatmul_jobs(const MatmulJob* jobs, size_t n_jobs, ThreadPool* pool, CpuIsa isa, QmatmulScratch& scratch);

// Rows per work item of the thread pool (the least, for a one-token job's guided items): a thread
// reads its item's rows as one sequential stream, long enough for the hardware prefetchers (with
// 16-row items two threads took turns every 18 KB of a matvec and ran no faster than one; 128 rows
// against 64 decoded 1.01-1.06x at batch 1 on 2 threads, quiet and beside a busy process; guided
// one-token items against 128 rows each read 78-87% of the probe against 70-80% in alternating
// 2-thread runs, and decoded as fast beside a busy process); items still many enough that a thread
// slowed by another process hands its share to the others.
inline constexpr size_t kQmatmulRowsPerItem = 128;

// Whether type has an integer kernel at the given level (false: the float fallback runs).
bool has_integer_kernel(GgmlType type, CpuIsa isa);

// One token's activations (cols of them, a multiple of the block) as qmatmul quantizes them for
// weights of this type at this level: act_quant.h's blocks written to out (cols / 32 ActQ8x32 or
// cols / 256 ActQ8x256). Returns the bytes written: 0 for a type computed in floats. For tests:
// every level must write the scalar level's bytes.
size_t quantize_activations(GgmlType type, const float* x, size_t cols, uint8_t* out, CpuIsa isa);

}  // namespace vks::cpuq
