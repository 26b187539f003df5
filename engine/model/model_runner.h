#pragma once
// The contract between the scheduler and a compute backend (Vulkan, or the CPU reference as
// fallback). One step runs one flattened batch mixing prefill chunks and decode tokens of many
// sequences over a paged KV cache; the scheduler owns block allocation, the runner owns the pool.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/model/llama_config.h"

namespace vks {

enum class LogitsMode : uint8_t {
  kNone,    // no output for this sequence (a prefill chunk that does not end the prompt)
  kArgmax,  // only the greedy token (computed on the device; nothing else read back)
  kFull,    // the full logits row of the sequence's last token (for sampling, logprobs), and of
            // its n_verify tokens before it
  kHidden,  // no logits: the final-normed hidden state of every token of the chunk (embeddings)
};

// The tokens of one sequence in a step: positions n_past .. n_past+n_tokens-1.
struct SeqChunk {
  int32_t token_offset = 0;           // index of its first token in StepBatch::tokens
  int32_t n_tokens = 0;               // 1 for decode, more for a prefill chunk
  int32_t n_past = 0;                 // tokens already in the KV cache before this step
  std::vector<int32_t> block_table;   // physical blocks covering positions [0, n_past+n_tokens)
  // A runner with a window pool (ModelRunner::num_window_blocks() > 0): the window layers' blocks
  // covering the same positions. The entries of blocks the sequence already gave back (wholly before
  // the first position its tokens see, n_past - window + 1) hold any valid id: nothing reads them.
  std::vector<int32_t> window_block_table;
  LogitsMode logits = LogitsMode::kNone;
  // kArgmax or kFull: the output also of the n_verify tokens before the last one (speculative
  // decoding verifies drafted tokens with them): their greedy tokens in StepResult::verify_argmax
  // and, with kFull, their logits rows before the last one's. 0 <= n_verify < n_tokens.
  int32_t n_verify = 0;
  // A model with recurrent layers (ModelRunner::recurrent_state_slots() > 0): the state slot this
  // sequence owns while it lives, distinct in a step; a chunk at n_past 0 starts it afresh, later
  // chunks continue it (so each token runs once, in order). Ignored by other models.
  int32_t state_slot = -1;
};

struct StepBatch {
  std::vector<int32_t> tokens;        // [n_tokens] every sequence's tokens, back to back
  std::vector<int32_t> positions;     // [n_tokens] filled by finalize()
  std::vector<int32_t> slot_mapping;  // [n_tokens] block*block_size + offset, filled by finalize()
  // [n_tokens] the same through the window block tables (empty without them), filled by finalize().
  std::vector<int32_t> window_slot_mapping;
  std::vector<SeqChunk> seqs;

  // Derives positions and the slot mappings from seqs (call after filling tokens and seqs).
  void finalize(int32_t block_size) {
    positions.assign(tokens.size(), 0);
    slot_mapping.assign(tokens.size(), 0);
    const bool windows = !seqs.empty() && !seqs.front().window_block_table.empty();
    window_slot_mapping.assign(windows ? tokens.size() : 0, 0);
    for (const SeqChunk& s : seqs) {
      for (int32_t i = 0; i < s.n_tokens; ++i) {
        const int32_t pos = s.n_past + i;
        const size_t block = static_cast<size_t>(pos / block_size);
        positions[s.token_offset + i] = pos;
        slot_mapping[s.token_offset + i] = s.block_table[block] * block_size + pos % block_size;
        if (windows && block < s.window_block_table.size()) {
          window_slot_mapping[s.token_offset + i] = s.window_block_table[block] * block_size + pos % block_size;
        }
      }
    }
  }
};

struct StepResult {
  std::vector<int32_t> argmax;  // [seqs.size()] greedy token of each seq with logits != kNone, else -1
  // [sum of n_verify] the greedy tokens after the n_verify tokens before each seq's last, in seq
  // order then token order (the last token's is argmax[seq]).
  std::vector<int32_t> verify_argmax;
  // [n_full * vocab] rows of the seqs with kFull, in seq order; a seq's n_verify rows come before
  // its last one's, in token order (n_full = sum over kFull seqs of 1 + n_verify).
  std::vector<float> logits;
  // [n_hidden_tokens * dim] the hidden state after the final RMSNorm (before the output projection)
  // of every token of the seqs with kHidden, in seq order then token order.
  std::vector<float> hidden;
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual const LlamaConfig& config() const = 0;
  virtual std::string device_name() const = 0;
  // Whether the weights and KV pool live in a discrete device's own memory rather than the host's
  // (the daemon budgets the two apart).
  virtual bool uses_device_heap() const { return false; }
  // Expert layers whose experts stay in host memory and run on the CPU beside the device
  // (RunnerOptions::cpu_expert_layers); 0 where every layer runs on one backend.
  virtual int32_t cpu_expert_layers() const { return 0; }
  // Of the weights, the bytes those host layers read from host memory (the mmapped file) while the
  // rest lives where uses_device_heap() says; 0 where every weight lives in one memory.
  virtual uint64_t host_weight_bytes() const { return 0; }
  virtual int32_t block_size() const = 0;        // tokens per KV block
  virtual int32_t num_blocks() const = 0;        // KV blocks in the pool (ids 0..num_blocks-1)
  // Blocks of the window layers' own pool (engine/model/kv_pools.h; ids 0..num_window_blocks-1),
  // 0 when every layer keeps its K/V in the one pool. With them every SeqChunk carries a
  // window_block_table, and the window pool's window is window_pool_window(config()).
  virtual int32_t num_window_blocks() const { return 0; }
  // What one token's keys and values take in the pool, every layer (stats, the model answer), and
  // the pools' element types as the user names them ("f16", "q8_0", "f32"; "K/V" where they differ).
  virtual uint64_t kv_bytes_per_token() const = 0;
  // The part of kv_bytes_per_token() in the window pool (0 without one).
  virtual uint64_t kv_window_bytes_per_token() const { return 0; }
  virtual std::string kv_type() const = 0;
  virtual int32_t max_step_tokens() const = 0;   // most tokens one step may hold
  virtual int32_t max_step_seqs() const = 0;     // most sequences one step may hold, and most output
                                                 // rows (one per seq with logits, plus its n_verify)
  // Per-sequence recurrent state slots (SeqChunk::state_slot), 0 for a model whose state is all in
  // the paged KV. With slots, at most that many sequences live at once and drafted tokens cannot be
  // verified (a state cannot roll back).
  virtual int32_t recurrent_state_slots() const { return 0; }
  // Slots that keep copies of states (a cached prefix's state at a block boundary), numbered after
  // the live ones: [recurrent_state_slots(), + recurrent_checkpoint_slots()). 0: a cached prefix of
  // a recurrent model cannot be reused.
  virtual int32_t recurrent_checkpoint_slots() const { return 0; }
  // Copies one slot's state over another (live or checkpoint), between steps, on the engine thread.
  // Throws vks::Error(kInvalidArgument) for a slot out of range.
  virtual void copy_recurrent_state(int32_t /*from*/, int32_t /*to*/) {
    throw Error(ErrorCode::kUnsupported, "this runner keeps no recurrent state checkpoints");
  }
  // Runs one forward pass. Throws vks::Error(kDevice/kInvalidArgument) on failure; the scheduler
  // thread catches it and fails the step's requests.
  virtual void step(const StepBatch& batch, StepResult& out) = 0;
};

}  // namespace vks
