#pragma once
// How the runner is built: device, CPU fallback, KV cache capacity, step limits.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/common/compute_share.h"
#include "engine/model/kv_type.h"

namespace vks {

struct RunnerOptions {
  // Vulkan device: "" = best by type (discrete > integrated > virtual > CPU), else a device index
  // ("0", "1", ...) or a case-insensitive substring of its name. Env VKSTREAM_DEVICE overrides "".
  std::string device;
  bool allow_cpu_fallback = true;  // no Vulkan device: run on the CPU reference instead of failing
  bool force_cpu = false;          // skip Vulkan entirely (tests, `--cpu`)
  // The CPU backend: the model file's bytes in anonymous huge-page memory (CpuRunnerOptions::
  // weights_in_memory); false reads them from the mapped file (`--mmap-weights`).
  bool cpu_weights_in_memory = true;
  // The CPU backend's threads (`--threads`); 0: one per physical core this process may use, within
  // its cgroup CPU quota (engine/common/cpu_count.h).
  int cpu_threads = 0;
  // Run on Vulkan even where the backend rule (backend_choice.h) picks the CPU reference (a CPU-type
  // device and a small model); implies no CPU fallback. A non-empty `device` or VKSTREAM_DEVICE also picks Vulkan.
  bool force_vulkan = false;

  int32_t block_size = 16;          // tokens per KV block
  int32_t num_blocks = 0;           // KV blocks in the pool; 0 = sized from kv_budget_bytes
  uint64_t kv_budget_bytes = 256ull << 20;  // KV memory (all layers, K and V) when num_blocks == 0
  // A model with window layers beside full ones may keep their K/V in a pool of their own
  // (engine/model/kv_pools.h; a budget is spent on it first), and every step's SeqChunk then carries
  // a window_block_table (the engine's scheduler fills it): -1 as many blocks as max_step_seqs
  // sequences need (at most num_blocks when that is set), n > 0 n blocks, 0 none: one pool, the
  // window layers' K/V kept whole (callers laying out their own block tables: kernel tests, a draft
  // model's drafter with its fixed slots of one pool).
  int32_t num_window_blocks = 0;
  // The K and V pools' element types (engine/model/kv_type.h; the CPU backend keeps F32 for kF16
  // and takes one type for both). Q8_0 takes 36 bytes per 32 values against F16's 64, Q4_0 20, so
  // the same budget holds 1.8x or 3.2x the blocks.
  KvType kv_type_k = KvType::kF16;
  KvType kv_type_v = KvType::kF16;
  int32_t max_step_tokens = 512;    // most tokens in one step (sizes activations)
  int32_t max_step_seqs = 64;       // most sequences in one step
  // Models with recurrent layers (Gated DeltaNet): the sequences that can live at once, each with a
  // state slot (0: max_step_seqs; the engine runs no more sequences than slots), and this many more
  // slots keep cached prefixes' states. Qwen3.5-0.8B: ~19 MiB a slot, which Vulkan allocates at
  // start. Ignored for other models.
  int32_t state_slots = 0;
  int32_t state_checkpoints = 8;
  int32_t live_state_slots() const { return state_slots > 0 ? state_slots : max_step_seqs; }
  int32_t max_context = 0;          // longest sequence in tokens; 0 = the model's context_length
  // Batches with at most this many tokens use the matrix-vector kernels, larger ones the tiled
  // matrix-matrix kernels (both accumulate each dot product in the same order); -1 = the kernels'
  // own choice (VKS_MATMUL_TOKEN_TILE). The rows family only: lanes has one kernel for both.
  int32_t matvec_max_tokens = -1;
  // Weight-matrix kernel family (engine/vulkan/kernels/ops.h MatmulFamily): "rows" (CPU devices'
  // layout), "lanes" (GPUs'), "dot" (int8 dot products, on request), or "" for the device's own
  // (VKSTREAM_MATMUL_KERNELS when set).
  std::string matmul_kernels;
  // The lanes family's token tile for prefill batches (vk::lanes_wide_tile_for): "8", "16", "32", or
  // "" for the device's own (VKSTREAM_LANES_TILE when set). The same bits for every choice.
  std::string lanes_tile;
  // The lanes family's keys per attention split (vk::attention_split_keys_for): a multiple of 64 up to
  // 4096, or "" for the device's own (VKSTREAM_ATTN_SPLIT_KEYS when set). A token's bits depend on it.
  std::string attention_split_keys;
  // Mixture-of-experts models (llama.cpp's --n-cpu-moe): the expert stacks (ffn_*_exps and their
  // biases) of the first N expert layers stay in host memory, read from the mmapped file, and run
  // on the CPU; router, shared expert and attention stay on the device. -1: as few layers as make
  // the weights fit the device (0 when they fit); a model that does not fit even with every expert
  // layer on the CPU is refused with its sizes. The CPU backend ignores it (its experts are all there).
  int32_t cpu_expert_layers = -1;
  // The device memory the weights may take; 0: the device's device-local memory less the KV pool.
  // Tests force a split with a small one.
  uint64_t device_weight_budget = 0;
  // Decode steps (every sequence one token) recorded once per shape and replayed (step_replay.h):
  // the same commands, so the same bits; off records every step anew.
  bool replay_decode_steps = true;
  // Keep compiled pipelines in $XDG_CACHE_HOME (or ~/.cache)/vkstream/pipeline_cache.bin.
  bool disk_pipeline_cache = true;
  // Run a few throw-away steps before returning the runner, so every kernel is compiled before the
  // daemon says READY (drivers compile lazily at the first dispatch). Off in kernel tests.
  bool warm_up = false;
  // The cores the CPU backend shares with other loaded models' CPU runners (null: its own).
  std::shared_ptr<ComputeShare> compute_share;
};

}  // namespace vks
