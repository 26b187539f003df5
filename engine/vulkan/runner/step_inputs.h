#pragma once
// Checks a StepBatch against the runner's limits (check_step_batch, shared with the CPU runner)
// and packs it into the flat int32 arrays the kernels read (per-token sequence index, padded block
// tables, the rows that produce logits).
#include <cstdint>
#include <vector>

#include "engine/model/model_runner.h"
#include "engine/model/step_batch_check.h"

namespace vks {

struct StepInputs {
  int32_t n_tokens = 0;
  int32_t n_seqs = 0;
  int32_t longest_keys = 0;            // keys the furthest token attends to (its position + 1)
  std::vector<int32_t> token_seq;      // [n_tokens] sequence index of each token
  std::vector<int32_t> block_tables;   // [n_seqs][max_blocks_per_seq], unused entries 0
  std::vector<int32_t> window_block_tables;  // the same of the window tables (with a window pool)
  std::vector<int32_t> out_rows;       // [n_out] token index whose logits are computed, seq order
                                       // (a seq's n_verify rows before its last)
  std::vector<int32_t> out_seq;        // [n_out] sequence index of each out row
  int32_t n_full = 0;                  // out rows whose sequence wants LogitsMode::kFull
  std::vector<int32_t> hidden_rows;    // token indexes whose final-normed state is read back
                                       // (every token of the LogitsMode::kHidden seqs), seq order
  std::vector<int32_t> slot_scratch;   // check_step_batch's working space, kept between steps
};

// Throws vks::Error(kInvalidArgument) naming the first problem (check_step_batch).
void pack_step_inputs(const StepBatch& batch, const StepLimits& limits, StepInputs& out);

}  // namespace vks
