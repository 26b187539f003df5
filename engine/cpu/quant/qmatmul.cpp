#include "engine/cpu/quant/qmatmul.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernels.h"

namespace vks::cpuq {
namespace {

enum class ActKind { kFloat, kQ8x32, kQ8x256 };

ActKind act_kind(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_0: return ActKind::kQ8x32;
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K: return ActKind::kQ8x256;
    default: return ActKind::kFloat;
  }
}

// Each level's table holds its own kernels over those of the levels below. Built once.
const KernelTable& kernel_table(CpuIsa isa) {
  static const std::vector<KernelTable> tables = [] {
    std::vector<KernelTable> out(4);
    add_scalar_kernels(out[0]);
    void (*const add_level[])(KernelTable&) = {add_avx_kernels, add_avx2_kernels, add_avx512vnni_kernels};
    for (size_t level = 1; level < out.size(); ++level) {
      out[level] = out[level - 1];
      add_level[level - 1](out[level]);
      // A lower level's one-token kernel stays only for types whose gemm this level left alone:
      // otherwise a 128-bit matvec would run a decode step where the level has a kernel of its own.
      for (size_t id = 0; id < kMaxTypeId; ++id) {
        const KernelTable& below = out[level - 1];
        KernelTable& here = out[level];
        if (here.gemm[id] != below.gemm[id] && here.one_token[id] == below.one_token[id]) here.one_token[id] = nullptr;
      }
    }
    return out;
  }();
  return tables[static_cast<size_t>(isa)];
}

CpuIsa runnable(CpuIsa isa) {
  const CpuIsa best = detected_isa();
  return static_cast<int>(isa) <= static_cast<int>(best) ? isa : best;
}

// The scratch of the overloads that take none: one per calling thread.
QmatmulScratch& thread_scratch() {
  thread_local QmatmulScratch scratch;
  return scratch;
}

// Rows per work item: kQmatmulRowsPerItem (qmatmul.h).
constexpr size_t kRowsPerItem = kQmatmulRowsPerItem;
// Tokens per work item of a large batch: one item's quantized activations (64 tokens x 2048
// columns of Q8x32 blocks: 384 KiB) stay in L2 while its rows sweep them.
constexpr size_t kTokensPerItem = 64;

template <class Fn>
void for_each_item(size_t n_items, ThreadPool* pool, const Fn& fn) {
  if (pool != nullptr && pool->size() > 1 && n_items > 1) {
    pool->parallel_for(n_items, fn);
  } else {
    for (size_t i = 0; i < n_items; ++i) fn(i);
  }
}

}  // namespace

bool has_integer_kernel(GgmlType type, CpuIsa isa) {
  const auto id = static_cast<size_t>(type);
  return act_kind(type) != ActKind::kFloat && id < kMaxTypeId && kernel_table(runnable(isa)).gemm[id] != nullptr;
}

size_t quantize_activations(GgmlType type, const float* x, size_t cols, uint8_t* out, CpuIsa isa) {
  const KernelTable& table = kernel_table(runnable(isa));
  switch (act_kind(type)) {
    case ActKind::kQ8x32:
      table.quantize_q8x32(x, reinterpret_cast<ActQ8x32*>(out), cols / 32);
      return cols / 32 * sizeof(ActQ8x32);
    case ActKind::kQ8x256:
      table.quantize_q8x256(x, reinterpret_cast<ActQ8x256*>(out), cols / 256);
      return cols / 256 * sizeof(ActQ8x256);
    case ActKind::kFloat: break;
  }
  return 0;
}

uint8_t* QmatmulScratch::reserve(size_t bytes) {
  const size_t lines = (bytes + sizeof(Line) - 1) / sizeof(Line);
  if (lines_.size() < lines) lines_.resize(lines);
  return reinterpret_cast<uint8_t*>(lines_.data());
}

void qmatmul(const TensorRef& w, const float* x, size_t n_tokens, float* y, ThreadPool* pool) {
  qmatmul(w, x, n_tokens, y, pool, active_isa(), thread_scratch());
}

void qmatmul(const TensorRef& w, const float* x, size_t n_tokens, float* y, ThreadPool* pool, CpuIsa isa) {
  qmatmul(w, x, n_tokens, y, pool, isa, thread_scratch());
}

void qmatmul(const TensorRef& w, const float* x, size_t n_tokens, float* y, ThreadPool* pool, CpuIsa isa,
             QmatmulScratch& scratch) {
  const std::optional<GgmlTypeTraits> traits = ggml_type_traits(w.type);
  if (!traits || traits->dequantize == nullptr) {
    throw Error(ErrorCode::kUnsupported,
                "qmatmul: tensor '" + w.name + "' has type " + std::string(ggml_type_name(w.type)) +
                    ", which the CPU backend cannot compute with (supported: " + supported_ggml_type_names() + ")");
  }
  if (w.cols % traits->block_size != 0) {
    throw Error(ErrorCode::kInvalidArgument, "qmatmul: tensor '" + w.name + "' has " + std::to_string(w.cols) +
                                                 " columns, not a multiple of the " + std::string(traits->name) +
                                                 " block size " + std::to_string(traits->block_size));
  }
  if (n_tokens == 0 || w.rows == 0) return;
  const size_t rows = w.rows;
  const size_t cols = w.cols;
  const size_t row_bytes = ggml_row_size(w.type, cols);
  const size_t n_blocks = cols / traits->block_size;
  const size_t n_row_items = (rows + kRowsPerItem - 1) / kRowsPerItem;
  const size_t n_token_items = (n_tokens + kTokensPerItem - 1) / kTokensPerItem;
  const size_t n_items = n_row_items * n_token_items;
  // Item i: rows [r0, r0 + n) of tokens [t0, t0 + nt); token chunks outermost, so the threads
  // share one chunk's activations at a time.
  auto item_rows = [&](size_t item, size_t& r0, size_t& n, size_t& t0, size_t& nt) {
    r0 = (item % n_row_items) * kRowsPerItem;
    n = std::min(kRowsPerItem, rows - r0);
    t0 = (item / n_row_items) * kTokensPerItem;
    nt = std::min(kTokensPerItem, n_tokens - t0);
  };

  const ActKind kind = act_kind(w.type);
  const auto id = static_cast<size_t>(w.type);
  const KernelTable* table = kind == ActKind::kFloat || id >= kMaxTypeId ? nullptr : &kernel_table(runnable(isa));
  const GemmFn gemm = table != nullptr ? table->gemm[id] : nullptr;
  if (gemm == nullptr) {
    const DequantizeFn dequantize = traits->dequantize;
    for_each_item(n_items, pool, [&](size_t item) {
      size_t r0 = 0, n = 0, t0 = 0, nt = 0;
      item_rows(item, r0, n, t0, nt);
      gemm_dequantized(dequantize, traits->block_size, traits->type_size, w.data + r0 * row_bytes, row_bytes, n,
                       x + t0 * cols, cols, nt, y + t0 * rows + r0, rows);
    });
    return;
  }

  // Quantize every token's activations once (each token on its own: the same bits whatever the batch).
  const size_t act_block_bytes = kind == ActKind::kQ8x32 ? sizeof(ActQ8x32) : sizeof(ActQ8x256);
  const size_t act_stride = n_blocks * act_block_bytes;  // a multiple of 16
  uint8_t* act = scratch.reserve(n_tokens * act_stride);
  auto quantize_token = [&](size_t t) {
    if (kind == ActKind::kQ8x32) {
      table->quantize_q8x32(x + t * cols, reinterpret_cast<ActQ8x32*>(act + t * act_stride), n_blocks);
    } else {
      table->quantize_q8x256(x + t * cols, reinterpret_cast<ActQ8x256*>(act + t * act_stride), n_blocks);
    }
  };
  if (n_tokens >= 4) {
    for_each_item(n_tokens, pool, quantize_token);
  } else {
    for (size_t t = 0; t < n_tokens; ++t) quantize_token(t);
  }

  const GemmFn one_token = table->one_token[id] != nullptr ? table->one_token[id] : gemm;
  for_each_item(n_items, pool, [&](size_t item) {
    size_t r0 = 0, n = 0, t0 = 0, nt = 0;
    item_rows(item, r0, n, t0, nt);
    (nt == 1 ? one_token : gemm)(w.data + r0 * row_bytes, row_bytes, n, act + t0 * act_stride, act_stride, nt,
                                 n_blocks, y + t0 * rows + r0, rows);
  });
}

}  // namespace vks::cpuq
