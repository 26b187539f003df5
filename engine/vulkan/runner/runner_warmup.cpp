#include "engine/vulkan/runner/runner_warmup.h"

#include <algorithm>
#include <chrono>

#include "engine/vulkan/shaders/shader_params.h"

namespace vks {
namespace {

// One sequence of `n_tokens` tokens at positions n_past.. in blocks 0.., all of token id 1 (the same
// block ids in the window pool, where the runner has one), in recurrent state slot `state_slot`
// (ignored by models without recurrent layers).
void add_sequence(StepBatch& batch, int32_t n_past, int32_t n_tokens, int32_t first_block, int32_t block_size,
                  LogitsMode logits, bool window_pool, int32_t state_slot = 0) {
  SeqChunk seq;
  seq.state_slot = state_slot;
  seq.token_offset = static_cast<int32_t>(batch.tokens.size());
  seq.n_tokens = n_tokens;
  seq.n_past = n_past;
  seq.logits = logits;
  const int32_t blocks = (n_past + n_tokens + block_size - 1) / block_size;
  for (int32_t b = 0; b < blocks; ++b) seq.block_table.push_back(first_block + b);
  if (window_pool) seq.window_block_table = seq.block_table;
  batch.tokens.insert(batch.tokens.end(), static_cast<size_t>(n_tokens), 1);
  batch.seqs.push_back(std::move(seq));
}

}  // namespace

WarmUpReport warm_up_runner(ModelRunner& runner) {
  const auto start = std::chrono::steady_clock::now();
  const int32_t block_size = runner.block_size();
  const int32_t context = static_cast<int32_t>(std::min<uint32_t>(runner.config().context_length, 1u << 30));
  const bool window_pool = runner.num_window_blocks() > 0;
  const int32_t pool_blocks = window_pool ? std::min(runner.num_blocks(), runner.num_window_blocks()) : runner.num_blocks();
  // Just large enough to take the matrix-matrix path (Ops::weight_op_for: above one matvec tile),
  // small enough for tiny models and pools. Compiling is per pipeline, not per token: a longer
  // prefill compiles nothing more and only computes; on a CPU device 64 tokens of a 1B model took
  // 11 s of a 30 s warm restart (issue 37).
  const int32_t prefill = std::max(1, std::min({VKS_MATVEC_TOKEN_TILE + 1, runner.max_step_tokens(), context - 2,
                                                 (pool_blocks / 2) * block_size - 2}));
  const int32_t blocks_per_seq = (prefill + 1 + block_size - 1) / block_size;
  const bool two_sequences = runner.max_step_seqs() >= 2 && pool_blocks >= 2 * blocks_per_seq &&
                             (runner.recurrent_state_slots() == 0 || runner.recurrent_state_slots() >= 2);

  WarmUpReport report;
  StepResult result;
  auto run = [&](StepBatch& batch) {
    batch.finalize(block_size);
    runner.step(batch, result);
    ++report.steps;
  };
  {
    StepBatch batch;  // prefill chunk with full logits (sampling path)
    add_sequence(batch, 0, prefill, 0, block_size, LogitsMode::kFull, window_pool);
    run(batch);
  }
  if (prefill + 1 >= context) {  // a toy context with no room for a decode step after the prefill
    report.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return report;
  }
  {
    StepBatch batch;  // single decode, greedy (device argmax)
    add_sequence(batch, prefill, 1, 0, block_size, LogitsMode::kArgmax, window_pool);
    run(batch);
  }
  if (two_sequences) {
    StepBatch batch;  // batched decode mixing greedy and sampled sequences
    add_sequence(batch, prefill, 1, 0, block_size, LogitsMode::kArgmax, window_pool);
    add_sequence(batch, prefill, 1, blocks_per_seq, block_size, LogitsMode::kFull, window_pool, 1);
    run(batch);
  }
  report.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace vks
