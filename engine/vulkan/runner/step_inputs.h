#pragma once
// Checks a StepBatch against the runner's limits and packs it into the flat int32 arrays the
// kernels read (per-token sequence index, padded block tables, the rows that produce logits).
#include <cstdint>
#include <vector>

#include "engine/model/model_runner.h"

namespace vks {

struct StepLimits {
  int32_t vocab_size = 0;
  int32_t block_size = 16;
  int32_t num_blocks = 0;
  int32_t max_step_tokens = 0;
  int32_t max_step_seqs = 0;
  int32_t max_blocks_per_seq = 0;  // longest sequence = max_blocks_per_seq * block_size tokens
};

struct StepInputs {
  int32_t n_tokens = 0;
  int32_t n_seqs = 0;
  int32_t longest_keys = 0;            // keys the furthest token attends to (its position + 1)
  std::vector<int32_t> token_seq;      // [n_tokens] sequence index of each token
  std::vector<int32_t> block_tables;   // [n_seqs][max_blocks_per_seq], unused entries 0
  std::vector<int32_t> out_rows;       // [n_out] token index whose logits are computed, seq order
  std::vector<int32_t> out_seq;        // [n_out] sequence index of each out row
  int32_t n_full = 0;                  // out rows whose sequence wants LogitsMode::kFull
  std::vector<int32_t> hidden_rows;    // token indexes whose final-normed state is read back
                                       // (every token of the LogitsMode::kHidden seqs), seq order
};

// Throws vks::Error(kInvalidArgument) naming the first problem: sizes, token ids, sequences that
// overlap or leave tokens uncovered, positions or slots that differ from StepBatch::finalize(),
// block ids outside the pool, sequences longer than the limits.
void pack_step_inputs(const StepBatch& batch, const StepLimits& limits, StepInputs& out);

}  // namespace vks
