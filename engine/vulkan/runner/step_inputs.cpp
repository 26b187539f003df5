#include "engine/vulkan/runner/step_inputs.h"

#include <algorithm>

namespace vks {

void pack_step_inputs(const StepBatch& batch, const StepLimits& limits, StepInputs& out) {
  check_step_batch(batch, limits, out.token_seq, out.slot_scratch);
  const size_t n = batch.tokens.size();
  out.n_tokens = static_cast<int32_t>(n);
  out.n_seqs = static_cast<int32_t>(batch.seqs.size());
  const size_t row = static_cast<size_t>(limits.max_blocks_per_seq);
  out.block_tables.assign(batch.seqs.size() * row, 0);
  out.window_block_tables.assign(limits.num_window_blocks > 0 ? batch.seqs.size() * row : 0, 0);
  out.out_rows.clear();
  out.out_seq.clear();
  out.n_full = 0;
  out.hidden_rows.clear();
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SeqChunk& c = batch.seqs[s];
    const size_t used = std::min(c.block_table.size(), row);
    std::copy_n(c.block_table.begin(), used, out.block_tables.begin() + static_cast<std::ptrdiff_t>(s * row));
    if (limits.num_window_blocks > 0) {
      const size_t window_used = std::min(c.window_block_table.size(), row);
      std::copy_n(c.window_block_table.begin(), window_used,
                  out.window_block_tables.begin() + static_cast<std::ptrdiff_t>(s * row));
    }
    if (c.logits == LogitsMode::kHidden) {
      for (int32_t i = 0; i < c.n_tokens; ++i) out.hidden_rows.push_back(c.token_offset + i);
    } else if (c.logits != LogitsMode::kNone) {
      for (int32_t i = c.n_tokens - 1 - c.n_verify; i < c.n_tokens; ++i) {  // the verified rows, then the last
        out.out_rows.push_back(c.token_offset + i);
        out.out_seq.push_back(static_cast<int32_t>(s));
      }
      if (c.logits == LogitsMode::kFull) out.n_full += 1 + c.n_verify;
    }
  }
  out.longest_keys = 0;
  for (size_t t = 0; t < n; ++t) out.longest_keys = std::max(out.longest_keys, batch.positions[t] + 1);
}

}  // namespace vks
