#pragma once
// The one check of a StepBatch against a runner's limits, shared by every backend (the CPU runner
// and the Vulkan runner had a copy each, and the copies disagreed: one refused two tokens writing
// the same KV slot, the other an empty batch and sequences longer than its block tables).
#include <cstdint>
#include <vector>

#include "engine/model/model_runner.h"

namespace vks {

struct StepLimits {
  int32_t vocab_size = 0;
  int32_t block_size = 16;
  int32_t num_blocks = 0;
  int32_t max_step_tokens = 0;
  int32_t max_step_seqs = 0;       // also the most output rows (logits / argmax rows) of a step
  int32_t max_blocks_per_seq = 0;  // longest sequence = max_blocks_per_seq * block_size tokens
  int32_t state_slots = 0;         // recurrent state slots (0: the model has none; state_slot ignored)
  int32_t num_window_blocks = 0;   // the window pool's blocks (0: none; window_block_table ignored)
};

// Throws vks::Error(kInvalidArgument, "invalid step batch: ...") naming the first problem: no
// tokens, more tokens, sequences or output rows than the limits, token ids outside the vocabulary,
// a sequence whose tokens fall outside the batch or overlap another's, a token of no sequence,
// positions or slots that differ from StepBatch::finalize(), blocks outside the pool or missing
// from a block table, a sequence longer than the limits, two tokens writing one KV slot, an
// n_verify outside [0, n_tokens) or on a sequence that is neither kArgmax nor kFull, and (with state
// slots) a state_slot outside [0, state_slots), shared by two sequences, or with an n_verify; with a
// window pool, the same checks of each window_block_table and window_slot_mapping against it.
// token_seq gets each token's sequence index; slot_scratch is working space. Both are reused by
// the caller across steps, so a warm runner allocates nothing here.
void check_step_batch(const StepBatch& batch, const StepLimits& limits, std::vector<int32_t>& token_seq,
                      std::vector<int32_t>& slot_scratch);

}  // namespace vks
