#include "engine/cpu/quant/qmatmul.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernels.h"
#include "engine/cpu/quant/packed_rows.h"

namespace vks::cpuq {
namespace {

enum class ActKind { kFloat, kQ8x32, kQ8x256 };

ActKind act_kind(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_0:
    case GgmlType::kMXFP4:
    case GgmlType::kIQ4_NL: return ActKind::kQ8x32;
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
    case GgmlType::kIQ4_XS: return ActKind::kQ8x256;
    default: return ActKind::kFloat;
  }
}

// Sets the kernels of one of this architecture's levels (only its files are compiled).
void add_level_kernels(CpuIsa isa, KernelTable& table) {
  switch (isa) {
    case CpuIsa::kScalar: return add_scalar_kernels(table);
#if defined(__x86_64__) || defined(__i386__)
    case CpuIsa::kAvx: return add_avx_kernels(table);
    case CpuIsa::kAvx2: return add_avx2_kernels(table);
    case CpuIsa::kAvx512Vnni: return add_avx512vnni_kernels(table);
    case CpuIsa::kAmx: return add_amx_kernels(table);
#elif defined(__aarch64__)
    case CpuIsa::kNeonDot: return add_neondot_kernels(table);
#endif
    default: return;  // another architecture's level: architecture_isas() never lists it
  }
}

// Each level's table holds its own kernels over those of the levels below (architecture_isas()'s
// order). Built once, indexed by the level's place in that list.
const KernelTable& kernel_table(CpuIsa isa) {
  static const std::vector<KernelTable> tables = [] {
    const std::vector<CpuIsa>& levels = architecture_isas();
    std::vector<KernelTable> out(levels.size());
    add_level_kernels(levels[0], out[0]);
    for (size_t level = 1; level < out.size(); ++level) {
      out[level] = out[level - 1];
      out[level].keeps_one_token_below = false;
      add_level_kernels(levels[level], out[level]);
      // A lower level's one-token kernel and tokens per item stay only for types whose kernel this
      // level left alone, or (one-token kernels) where the level says its kernels give the lower
      // level's bits: a decode step must not take another convention's bits than a batch.
      for (size_t id = 0; id < kMaxTypeId; ++id) {
        const KernelTable& below = out[level - 1];
        KernelTable& here = out[level];
        if (here.gemm[id] == below.gemm[id] && here.prepared[id].gemm == below.prepared[id].gemm) continue;
        if (!here.keeps_one_token_below && here.one_token[id] == below.one_token[id]) here.one_token[id] = nullptr;
        if (here.tokens_per_item[id] == below.tokens_per_item[id]) here.tokens_per_item[id] = 0;
      }
    }
    return out;
  }();
  return tables[isa_position(isa)];
}

CpuIsa runnable(CpuIsa isa) {
  const CpuIsa best = detected_isa();
  return isa_at_most(isa, best) ? isa : best;
}

// The scratch of the overloads that take none: one per calling thread.
QmatmulScratch& thread_scratch() {
  thread_local QmatmulScratch scratch;
  return scratch;
}

// Rows per work item: kQmatmulRowsPerItem (qmatmul.h).
constexpr size_t kRowsPerItem = kQmatmulRowsPerItem;
// Tokens per work item of a large batch, unless the kernel table says otherwise: one item's
// quantized activations (64 tokens x 2048 columns of Q8x32 blocks: 320 KiB) stay in L2 while its
// rows sweep them.
constexpr size_t kTokensPerItem = 64;
static_assert(kTokensPerItem % kPreparedTileTokens == 0, "a work item's tiles are whole tiles of the product's");

template <class Fn>
void for_each_item(size_t n_items, ThreadPool* pool, const Fn& fn) {
  if (pool != nullptr && pool->size() > 1 && n_items > 1) {
    pool->parallel_for(n_items, fn);
  } else {
    for (size_t i = 0; i < n_items; ++i) fn(i);
  }
}

// One job of a qmatmul_jobs call, worked out before any thread starts.
struct JobPlan {
  const uint8_t* w = nullptr;  // row first_row's blocks
  size_t row_bytes = 0, rows = 0, cols = 0, n_blocks = 0, n_tokens = 0;
  const float* x = nullptr;
  float* y = nullptr;
  ActKind kind = ActKind::kFloat;
  GemmFn gemm = nullptr;  // null with prepared.gemm: the float fallback
  GemmFn one_token = nullptr;
  PreparedKernel prepared;
  size_t n_prepared = 0;       // tiles prepared (the first n_prepared of its activations'), 0: none
  size_t prepared_offset = 0;  // bytes into the call's prepared tiles
  DequantizeFn dequantize = nullptr;
  uint32_t block_size = 0, type_size = 0;
  size_t act_offset = 0;  // bytes into the call's scratch: this job's quantized activations
  size_t act_stride = 0;
  size_t tokens_per_item = kTokensPerItem;
};

// One work item of a call: rows [r0, r0 + rows) of tokens [t0, t0 + tokens) of plan `job`.
struct WorkItem {
  uint32_t job = 0;
  uint32_t r0 = 0, rows = 0;
  uint32_t t0 = 0, tokens = 0;
};

// A job's share of a stage (quantizing, preparing tiles): plan `job`'s tokens or tiles are the
// stage's items from `first` on.
struct StageRun {
  size_t job = 0;
  size_t first = 0;
};

// The bookkeeping of the calls on this thread, kept so that a call allocates nothing once the
// largest has been seen.
struct CallPlan {
  std::vector<JobPlan> jobs;
  std::vector<StageRun> quantize;
  std::vector<StageRun> prepare;
  std::vector<WorkItem> items;
  const KernelTable* table = nullptr;
  uint8_t* act = nullptr;
  uint8_t* prepared = nullptr;  // after the activations
};
CallPlan& thread_plan() {
  thread_local CallPlan plan;
  return plan;
}

// Throws qmatmul's errors for a job the CPU backend cannot compute.
GgmlTypeTraits check_job(const MatmulJob& job) {
  const TensorRef& w = *job.w;
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
  if (job.first_row > w.rows || job.rows > w.rows - job.first_row) {
    throw Error(ErrorCode::kInvalidArgument, "qmatmul: rows [" + std::to_string(job.first_row) + ", " +
                                                 std::to_string(job.first_row + job.rows) + ") of tensor '" + w.name +
                                                 "', which has " + std::to_string(w.rows));
  }
  return *traits;
}

// The packed kernel of a job on a WeightLayout::kRows16 matrix, or qmatmul's error: the level must
// read the layout, and the job's rows must be whole groups of 16 (its work items are then too).
PackedKernel check_packed(const MatmulJob& job, const KernelTable& table, CpuIsa isa) {
  const TensorRef& w = *job.w;
  const auto id = static_cast<size_t>(w.type);
  const PackedKernel kernel = id < kMaxTypeId ? table.packed[id] : PackedKernel{};
  if (kernel.prepared.gemm == nullptr) {
    throw Error(ErrorCode::kUnsupported, "qmatmul: tensor '" + w.name + "' (" + std::string(ggml_type_name(w.type)) +
                                             ") is packed in groups of " + std::to_string(kRows16Group) +
                                             " rows, which the " + std::string(isa_name(isa)) +
                                             " level's kernels cannot read (packs_rows16)");
  }
  if (job.first_row % kRows16Group != 0 || job.rows % kRows16Group != 0) {
    throw Error(ErrorCode::kInvalidArgument, "qmatmul: rows [" + std::to_string(job.first_row) + ", " +
                                                 std::to_string(job.first_row + job.rows) + ") of tensor '" + w.name +
                                                 "', packed in groups of " + std::to_string(kRows16Group) +
                                                 " rows, do not start and end at a group");
  }
  return kernel;
}

// Whether plan b can read plan a's quantized activations: the same inputs in the same blocks.
bool same_activations(const JobPlan& a, const JobPlan& b) {
  return a.kind != ActKind::kFloat && a.kind == b.kind && a.x == b.x && a.n_tokens == b.n_tokens && a.cols == b.cols;
}

// The tiles of p's activations that its prepared kernel reads (PreparedKernel's thresholds): the
// whole ones, and the last partial one where it has tail_from tokens and its work item tiles_from;
// none for a kernel that prepares none.
size_t tiles_read(const JobPlan& p) {
  if (p.prepared.prepare == nullptr) return 0;
  const size_t whole = p.n_tokens / kPreparedTileTokens, tail = p.n_tokens % kPreparedTileTokens;
  const size_t last_item_tokens = p.n_tokens - (p.n_tokens - 1) / p.tokens_per_item * p.tokens_per_item;
  const bool tail_read = tail != 0 && tail >= p.prepared.tail_from && last_item_tokens >= p.prepared.tiles_from;
  return whole + (tail_read ? 1 : 0);
}

// Whether b can read the tiles a prepared: the same activations, prepared the same way, and at
// least the tiles b reads.
bool same_tiles(const JobPlan& a, const JobPlan& b) {
  return a.act_offset == b.act_offset && a.prepared.prepare == b.prepared.prepare &&
         a.prepared.bytes == b.prepared.bytes && a.n_prepared >= b.n_prepared;
}

size_t round_up_64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// The call's work items, claimed in this order. A product of several tokens: kRowsPerItem rows x
// tokens_per_item tokens, token chunks outermost (the threads share one chunk's activations at a
// time). One token's product (a decode step's matvec) streams its rows from memory, and each item
// a thread claims starts a new stream that the hardware prefetchers ramp up on; so its items are
// guided: each takes 1/(2 x threads) of the one-token rows the call has left, at least
// kRowsPerItem. The first items are long streams, the last ones short enough that the threads end
// together (by this rule, a TinyLlama-shape layer's calls at 2 threads: 9 to 16 items instead of
// 16 to 88; the logits 19 instead of 250). Bits do not depend on items: rows are computed alone,
// and items start at multiples of 16 rows (packed groups).
void plan_items(CallPlan& call, size_t threads) {
  call.items.clear();
  size_t one_token_rows = 0;
  for (const JobPlan& p : call.jobs) one_token_rows += p.n_tokens == 1 ? p.rows : 0;
  for (size_t j = 0; j < call.jobs.size(); ++j) {
    const JobPlan& p = call.jobs[j];
    const auto item = [&](size_t r0, size_t rows, size_t t0, size_t tokens) {
      call.items.push_back({static_cast<uint32_t>(j), static_cast<uint32_t>(r0), static_cast<uint32_t>(rows),
                            static_cast<uint32_t>(t0), static_cast<uint32_t>(tokens)});
    };
    if (p.n_tokens == 1) {
      for (size_t r0 = 0; r0 < p.rows;) {
        const size_t share = (one_token_rows + 2 * threads - 1) / (2 * threads);
        const size_t rows = std::min((std::max(share, kRowsPerItem) + 15) / 16 * 16, p.rows - r0);
        item(r0, rows, 0, 1);
        r0 += rows;
        one_token_rows -= rows;
      }
      continue;
    }
    for (size_t t0 = 0; t0 < p.n_tokens; t0 += p.tokens_per_item) {
      for (size_t r0 = 0; r0 < p.rows; r0 += kRowsPerItem) {
        item(r0, std::min(kRowsPerItem, p.rows - r0), t0, std::min(p.tokens_per_item, p.n_tokens - t0));
      }
    }
  }
}

}  // namespace

bool has_integer_kernel(GgmlType type, CpuIsa isa) {
  const auto id = static_cast<size_t>(type);
  if (act_kind(type) == ActKind::kFloat || id >= kMaxTypeId) return false;
  const KernelTable& table = kernel_table(runnable(isa));
  return table.gemm[id] != nullptr || table.prepared[id].gemm != nullptr;
}

bool packs_rows16(GgmlType type, CpuIsa isa) {
  const auto id = static_cast<size_t>(type);
  return id < kMaxTypeId && kernel_table(isa).packed[id].prepared.gemm != nullptr;
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
  const MatmulJob job{&w, 0, w.rows, x, n_tokens, y};
  qmatmul_jobs(&job, 1, pool, isa, scratch);
}

void qmatmul_jobs(const MatmulJob* jobs, size_t n_jobs, ThreadPool* pool) {
  qmatmul_jobs(jobs, n_jobs, pool, active_isa(), thread_scratch());
}

void qmatmul_jobs(const MatmulJob* jobs, size_t n_jobs, ThreadPool* pool, CpuIsa isa, QmatmulScratch& scratch) {
  CallPlan& call = thread_plan();
  call.jobs.clear();
  call.quantize.clear();
  call.prepare.clear();
  const CpuIsa level = runnable(isa);
  call.table = &kernel_table(level);
  size_t n_quantize = 0, act_bytes = 0, n_prepare = 0, prepared_bytes = 0;
  size_t tiles_job = 0;  // the last job that prepared tiles of the current activations (0: none)
  for (size_t j = 0; j < n_jobs; ++j) {
    const MatmulJob& job = jobs[j];
    const GgmlTypeTraits traits = check_job(job);
    const bool packed = job.w->layout == WeightLayout::kRows16;
    const PackedKernel packed_kernel = packed ? check_packed(job, *call.table, level) : PackedKernel{};
    if (job.n_tokens == 0 || job.rows == 0) continue;
    const TensorRef& w = *job.w;
    JobPlan& p = call.jobs.emplace_back();
    p.row_bytes = ggml_row_size(w.type, w.cols);
    p.w = w.data + job.first_row * p.row_bytes;
    p.rows = job.rows;
    p.cols = w.cols;
    p.n_blocks = w.cols / traits.block_size;
    p.n_tokens = job.n_tokens;
    p.x = job.x;
    p.y = job.y;
    p.dequantize = traits.dequantize;
    p.block_size = traits.block_size;
    p.type_size = traits.type_size;
    const auto id = static_cast<size_t>(w.type);
    p.kind = id < kMaxTypeId ? act_kind(w.type) : ActKind::kFloat;
    if (packed) {
      // No one-token kernel of another level: none reads the layout.
      p.prepared = packed_kernel.prepared;
      if (packed_kernel.tokens_per_item != 0) p.tokens_per_item = packed_kernel.tokens_per_item;
    } else if (p.kind != ActKind::kFloat) {
      p.gemm = call.table->gemm[id];
      p.prepared = call.table->prepared[id];
    }
    if (p.gemm == nullptr && p.prepared.gemm == nullptr) {
      p.kind = ActKind::kFloat;
    } else if (!packed) {
      p.one_token = call.table->one_token[id];
      if (call.table->tokens_per_item[id] != 0) p.tokens_per_item = call.table->tokens_per_item[id];
    }
    if (p.kind != ActKind::kFloat) {
      p.act_stride = p.n_blocks * (p.kind == ActKind::kQ8x32 ? sizeof(ActQ8x32) : sizeof(ActQ8x256));  // a multiple of 16
      const size_t index = call.jobs.size() - 1;
      if (index > 0 && same_activations(call.jobs[index - 1], p)) {
        p.act_offset = call.jobs[index - 1].act_offset;
      } else {
        p.act_offset = act_bytes;
        act_bytes += p.n_tokens * p.act_stride;
        call.quantize.push_back({index, n_quantize});
        n_quantize += p.n_tokens;
        tiles_job = 0;
      }
      if (p.prepared.gemm != nullptr) p.n_prepared = tiles_read(p);
      if (p.n_prepared > 0) {
        // Jobs reading the same activations (gate and up) share their tiles as they share them.
        if (tiles_job > 0 && same_tiles(call.jobs[tiles_job - 1], p)) {
          p.prepared_offset = call.jobs[tiles_job - 1].prepared_offset;
        } else {
          p.prepared_offset = prepared_bytes;
          prepared_bytes += round_up_64(p.prepared.bytes(p.n_tokens, p.n_blocks));
          call.prepare.push_back({index, n_prepare});
          n_prepare += p.n_prepared;
          tiles_job = index + 1;
        }
      }
    }
  }
  if (call.jobs.empty()) return;
  plan_items(call, pool != nullptr ? static_cast<size_t>(pool->size()) : 1);
  act_bytes = round_up_64(act_bytes);
  call.act = act_bytes + prepared_bytes > 0 ? scratch.reserve(act_bytes + prepared_bytes) : nullptr;
  call.prepared = call.act + act_bytes;

  // Quantize every job's activations once, each token on its own (the same bits whatever the batch).
  // The lambdas capture one pointer, which std::function stores without allocating.
  const CallPlan* plan = &call;
  auto quantize_token = [plan](size_t item) {
    const auto run = std::upper_bound(plan->quantize.begin(), plan->quantize.end(), item,
                                      [](size_t i, const StageRun& r) { return i < r.first; }) - 1;
    const JobPlan& p = plan->jobs[run->job];
    const size_t t = item - run->first;
    uint8_t* out = plan->act + p.act_offset + t * p.act_stride;
    if (p.kind == ActKind::kQ8x32) {
      plan->table->quantize_q8x32(p.x + t * p.cols, reinterpret_cast<ActQ8x32*>(out), p.n_blocks);
    } else {
      plan->table->quantize_q8x256(p.x + t * p.cols, reinterpret_cast<ActQ8x256*>(out), p.n_blocks);
    }
  };
  if (n_quantize >= 4) {
    for_each_item(n_quantize, pool, quantize_token);
  } else {
    for (size_t t = 0; t < n_quantize; ++t) quantize_token(t);
  }

  // Then the tiles that prepared kernels read, once for every work item (none in a decode step).
  if (n_prepare > 0) {
    for_each_item(n_prepare, pool, [plan](size_t item) {
      const auto run = std::upper_bound(plan->prepare.begin(), plan->prepare.end(), item,
                                        [](size_t i, const StageRun& r) { return i < r.first; }) - 1;
      const JobPlan& p = plan->jobs[run->job];
      const size_t t0 = (item - run->first) * kPreparedTileTokens;
      p.prepared.prepare(plan->act + p.act_offset + t0 * p.act_stride, p.act_stride,
                         std::min(kPreparedTileTokens, p.n_tokens - t0), p.n_blocks,
                         plan->prepared + p.prepared_offset + p.prepared.bytes(t0, p.n_blocks));
    });
  }

  // The products, item by item (plan_items).
  for_each_item(call.items.size(), pool, [plan](size_t item) {
    const WorkItem& it = plan->items[item];
    const JobPlan& p = plan->jobs[it.job];
    const size_t r0 = it.r0, n = it.rows, t0 = it.t0, nt = it.tokens;
    const uint8_t* w = p.w + r0 * p.row_bytes;
    float* y = p.y + t0 * p.rows + r0;
    if (p.kind == ActKind::kFloat) {
      gemm_dequantized(p.dequantize, p.block_size, p.type_size, w, p.row_bytes, n, p.x + t0 * p.cols, p.cols, nt, y,
                       p.rows);
      return;
    }
    const uint8_t* act = plan->act + p.act_offset + t0 * p.act_stride;
    if (nt == 1 && p.one_token != nullptr) {
      p.one_token(w, p.row_bytes, n, act, p.act_stride, 1, p.n_blocks, y, p.rows);
    } else if (p.prepared.gemm != nullptr) {
      // t0 is a multiple of the tiles' 16 tokens (tokens_per_item is); past the prepared tiles the
      // item reads none.
      const size_t tile = t0 / kPreparedTileTokens;
      const uint8_t* tiles =
          tile < p.n_prepared ? plan->prepared + p.prepared_offset + p.prepared.bytes(t0, p.n_blocks) : nullptr;
      p.prepared.gemm(w, p.row_bytes, n, act, p.act_stride, tiles, nt, p.n_blocks, y, p.rows);
    } else {
      p.gemm(w, p.row_bytes, n, act, p.act_stride, nt, p.n_blocks, y, p.rows);
    }
  });
}

}  // namespace vks::cpuq
