#pragma once
// vks::ModelRunner on the CPU: the backend of machines without a GPU. A step runs layer by layer
// over all its tokens with the quantized integer kernels (engine/cpu/quant: activations quantized
// per block as llama.cpp does, float weights as the reference computes them); every value of a
// token comes from fixed-order reductions over that token's own inputs and its sequence's cached
// positions 0..pos, so a sequence's results are bit-identical whatever else is in the batch and
// however its prompt was chunked. CpuModel keeps the float reference as the tests' oracle. One
// step at a time (the engine thread).
#include <cstdint>
#include <string>
#include <vector>

#include <memory>

#include "engine/common/compute_share.h"
#include "engine/common/run_delay.h"
#include "engine/common/thread_pool.h"
#include "engine/common/zeroed_array.h"
#include "engine/cpu/cpu_layer.h"
#include "engine/cpu/decode_threads.h"
#include "engine/cpu/cpu_weights.h"
#include "engine/model/kv_type.h"
#include "engine/model/llama_model.h"
#include "engine/model/model_runner.h"
#include "engine/model/step_batch_check.h"

namespace vks {

struct CpuRunnerOptions {
  int32_t block_size = 16;        // tokens per KV block
  int32_t num_blocks = 256;       // KV blocks in the pool of each layer
  int threads = 0;                // 0: one per physical core this process may use (engine/common/cpu_count.h)
  int32_t max_step_tokens = 512;  // most tokens one step may hold
  int32_t max_step_seqs = 64;     // most sequences one step may hold
  // Keys and values in F32 (kF16, the unquantized default), or both in Q8_0 or Q4_0
  // (engine/cpu/kv_quant.h: 0.28x or 0.16x the bytes; head sizes multiples of 32).
  KvType kv_type = KvType::kF16;
  // The cores this runner shares with other models' runners (null: it has them to itself).
  std::shared_ptr<ComputeShare> compute_share;
  // Models with recurrent layers (Gated DeltaNet): the sequences that can live at once, each with a
  // state slot (engine/cpu/recurrent_state.h), and the checkpoint slots keeping cached prefixes'
  // states (a slot costs memory once used). Ignored for other models.
  int32_t state_slots = 16;
  int32_t state_checkpoints = 16;
  // Models with window layers beside full ones (engine/model/kv_pools.h): the window layers' own
  // pool's blocks (every SeqChunk then carries a window_block_table). -1: window_pool_blocks for
  // max_step_seqs sequences, at most num_blocks; 0: the window layers keep their K/V in the one
  // pool, whole (what a caller laying out its own block tables gets).
  int32_t num_window_blocks = 0;
  // The matrices a step streams copied into anonymous memory with transparent huge pages when the
  // runner is made (cpu_weights.h): decode streams every weight once per step, and from a file's
  // 4 KiB pages it ran at 0.5-0.65x the speed. false: read the mapped file (no memory held beyond
  // the page cache the kernel can drop).
  bool weights_in_memory = true;
  // With weights_in_memory: the copy of a matrix the kernel level reads in a layout of its own is
  // packed into it (engine/cpu/quant/packed_rows.h; the same bits). false: GGUF's layout (tests
  // compare the two).
  bool pack_weights = true;
  // Decode steps shed threads whose workers wait for a CPU (another process holding their cores) and
  // probe for them again (decode_threads.h). false: every step runs on every thread.
  bool adapt_decode_threads = true;
};

class CpuRunner final : public ModelRunner {
 public:
  // Throws vks::Error(kInvalidArgument) for non-positive options.
  explicit CpuRunner(const LlamaModel& model, CpuRunnerOptions options = {});

  const LlamaConfig& config() const override { return model_.config(); }
  std::string device_name() const override { return "cpu"; }
  int32_t block_size() const override { return options_.block_size; }
  int32_t num_blocks() const override { return options_.num_blocks; }
  int32_t num_window_blocks() const override { return window_blocks_; }
  uint64_t kv_bytes_per_token() const override;
  uint64_t kv_window_bytes_per_token() const override;
  // The window pool's blocks CpuRunner(model, options) keeps (num_window_blocks resolved).
  static int32_t window_blocks_for(const LlamaConfig& c, const CpuRunnerOptions& options);
  // One token's K (or V) row of kv_dim values in one layer's pool: F32 for kF16, else kv_row_bytes's.
  static uint64_t pool_row_bytes(KvType type, uint64_t kv_dim);
  std::string kv_type() const override { return quantized_kv() ? std::string(kv_type_name(options_.kv_type)) : "f32"; }
  int32_t max_step_tokens() const override { return options_.max_step_tokens; }
  int32_t max_step_seqs() const override { return options_.max_step_seqs; }
  int32_t recurrent_state_slots() const override { return limits_.state_slots; }
  int32_t recurrent_checkpoint_slots() const override { return states_.slots() - limits_.state_slots; }
  void copy_recurrent_state(int32_t from, int32_t to) override;
  // Where the weights are read from (options.weights_in_memory) and how many matrices are packed,
  // for the log.
  const WeightsResidence& weights_residence() const { return weights_->residence(); }
  size_t packed_matrices() const { return weights_->packed_matrices(); }

  // Throws vks::Error(kInvalidArgument) for a malformed batch (nothing is computed then).
  void step(const StepBatch& batch, StepResult& out) override;

 private:
  // The step's layers, logits and hidden states, once step() has checked it and set the threads.
  void step_layers(const StepBatch& batch, StepResult& out);
  const LlamaModel& model_;
  CpuRunnerOptions options_;
  std::unique_ptr<CpuWeights> weights_;  // the model's, or its matrices' copy (options.weights_in_memory)
  int32_t window_blocks_ = 0;         // the window layers' pool (0: they share the one pool)
  StepLimits limits_;                 // what check_step_batch holds a step to
  std::vector<int32_t> token_seq_;    // per token of the current step: its sequence
  std::vector<int32_t> slot_scratch_;
  ThreadPool pool_;
  DecodeThreads decode_threads_{pool_.size()};
  std::unique_ptr<RunDelay> run_delay_;  // the workers' waiting for a CPU; null: decode on every thread

  std::unique_ptr<CpuModelVectors> vectors_;  // norms, biases, rope factors in F32

  bool quantized_kv() const { return options_.kv_type != KvType::kF16; }
  // Paged KV cache, per layer: num_blocks blocks of block_size * kv_dim values, by KV head within a
  // block (paged_kv_layout.h); slot = block * block_size + offset (a window-pool layer's:
  // window_blocks_ blocks, addressed by the window block tables).
  // F32 in key_pool_/value_pool_, or quantized in the *_quants_ pools (kv_plane_bytes of the
  // values) with their scales [.., kv_dim/32].
  // Zeroed lazily (ZeroedArray): a pool's pages cost only once written.
  std::vector<ZeroedArray<float>> key_pool_;
  std::vector<ZeroedArray<float>> value_pool_;
  std::vector<ZeroedArray<uint8_t>> key_quants_, value_quants_;
  std::vector<ZeroedArray<float>> key_scales_, value_scales_;
  RecurrentStatePool states_;  // DeltaNet layers' per-sequence states (no slots for other models)

  // A step's working memory, kept between steps so that a decode step allocates nothing once the
  // largest step has been seen (every buffer is written before it is read in a step).
  CpuActivations acts_;
  std::vector<size_t> output_seqs_;  // per logits row: its sequence
  std::vector<size_t> output_rows_;  // per logits row: its token
  std::vector<float> logits_;        // [logits rows, vocab]
};

}  // namespace vks
