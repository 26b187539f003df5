#include "engine/model/step_batch_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "engine/common/error.h"

namespace vks {
namespace {

[[noreturn]] void bad_batch(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "invalid step batch: " + what);
}

// The first `needed` entries of one of a sequence's block tables must be blocks of its pool.
void check_table(size_t s, const char* what, const std::vector<int32_t>& table, int64_t needed, int32_t pool_blocks,
                 int64_t len) {
  if (static_cast<int64_t>(table.size()) < needed) {
    bad_batch(fmt::format("seq {}: {} has {} blocks, positions up to {} need {}", s, what, table.size(), len - 1,
                          needed));
  }
  for (int64_t b = 0; b < needed; ++b) {
    const int32_t block = table[static_cast<size_t>(b)];
    if (block < 0 || block >= pool_blocks) {
      bad_batch(fmt::format("seq {}: {} entry {} out of the pool [0, {})", s, what, block, pool_blocks));
    }
  }
}

void check_seq(const StepBatch& batch, const StepLimits& limits, size_t s, std::vector<int32_t>& token_seq) {
  const SeqChunk& c = batch.seqs[s];
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());
  if (c.n_tokens <= 0 || c.token_offset < 0 || int64_t{c.token_offset} + c.n_tokens > n_tokens) {
    bad_batch(fmt::format("seq {}: tokens [{}, {}+{}) outside the batch of {}", s, c.token_offset,
                          c.token_offset, c.n_tokens, n_tokens));
  }
  if (c.n_past < 0) bad_batch(fmt::format("seq {}: negative n_past {}", s, c.n_past));
  const bool has_logits = c.logits == LogitsMode::kArgmax || c.logits == LogitsMode::kFull;
  if (c.n_verify < 0 || c.n_verify >= c.n_tokens || (c.n_verify > 0 && !has_logits)) {
    bad_batch(fmt::format("seq {}: n_verify {} needs LogitsMode::kArgmax or kFull and fewer than its {} tokens", s,
                          c.n_verify, c.n_tokens));
  }
  if (limits.state_slots > 0) {
    if (c.state_slot < 0 || c.state_slot >= limits.state_slots) {
      bad_batch(fmt::format("seq {}: state slot {} outside [0, {}) (the model has recurrent layers)", s, c.state_slot,
                            limits.state_slots));
    }
    if (c.n_verify > 0) bad_batch(fmt::format("seq {}: a recurrent state cannot verify drafted tokens", s));
  }
  const int64_t len = int64_t{c.n_past} + c.n_tokens;
  const int64_t max_len = int64_t{limits.max_blocks_per_seq} * limits.block_size;
  if (len > max_len) {
    bad_batch(fmt::format("seq {}: length {} exceeds the longest sequence {}", s, len, max_len));
  }
  const int64_t blocks_needed = (len + limits.block_size - 1) / limits.block_size;
  check_table(s, "block table", c.block_table, blocks_needed, limits.num_blocks, len);
  if (limits.num_window_blocks > 0) {
    check_table(s, "window block table", c.window_block_table, blocks_needed, limits.num_window_blocks, len);
  }
  for (int32_t i = 0; i < c.n_tokens; ++i) {
    const size_t t = static_cast<size_t>(c.token_offset + i);
    if (token_seq[t] != -1) bad_batch(fmt::format("token {} belongs to seqs {} and {}", t, token_seq[t], s));
    token_seq[t] = static_cast<int32_t>(s);
    const int32_t pos = c.n_past + i;
    const auto block = static_cast<size_t>(pos / limits.block_size);
    const int32_t slot = c.block_table[block] * limits.block_size + pos % limits.block_size;
    if (batch.positions[t] != pos || batch.slot_mapping[t] != slot) {
      bad_batch(fmt::format("token {}: position {} / slot {} differ from {} / {} (call finalize())", t,
                            batch.positions[t], batch.slot_mapping[t], pos, slot));
    }
    if (limits.num_window_blocks > 0) {
      const int32_t window_slot = c.window_block_table[block] * limits.block_size + pos % limits.block_size;
      if (batch.window_slot_mapping[t] != window_slot) {
        bad_batch(fmt::format("token {}: window slot {} differs from {} (call finalize())", t,
                              batch.window_slot_mapping[t], window_slot));
      }
    }
  }
}

}  // namespace

void check_step_batch(const StepBatch& batch, const StepLimits& limits, std::vector<int32_t>& token_seq,
                      std::vector<int32_t>& slot_scratch) {
  const size_t n = batch.tokens.size();
  if (n == 0) bad_batch("no tokens");
  if (n > static_cast<size_t>(limits.max_step_tokens)) {
    bad_batch(fmt::format("{} tokens exceed max_step_tokens {}", n, limits.max_step_tokens));
  }
  if (batch.seqs.empty() || batch.seqs.size() > static_cast<size_t>(limits.max_step_seqs)) {
    bad_batch(fmt::format("{} sequences (allowed 1..{})", batch.seqs.size(), limits.max_step_seqs));
  }
  if (batch.positions.size() != n || batch.slot_mapping.size() != n) {
    bad_batch(fmt::format("{} tokens but {} positions and {} slots (call finalize())", n,
                          batch.positions.size(), batch.slot_mapping.size()));
  }
  if (limits.num_window_blocks > 0 && batch.window_slot_mapping.size() != n) {
    bad_batch(fmt::format("{} tokens but {} window slots (the model has a window pool: call finalize())", n,
                          batch.window_slot_mapping.size()));
  }
  for (size_t t = 0; t < n; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= limits.vocab_size) {
      bad_batch(fmt::format("token {} has id {} outside the vocabulary [0, {})", t, batch.tokens[t],
                            limits.vocab_size));
    }
  }
  token_seq.assign(n, -1);
  size_t out_rows = 0;
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    check_seq(batch, limits, s, token_seq);
    const SeqChunk& c = batch.seqs[s];
    if (c.logits != LogitsMode::kNone && c.logits != LogitsMode::kHidden) out_rows += 1 + static_cast<size_t>(c.n_verify);
  }
  if (out_rows > static_cast<size_t>(limits.max_step_seqs)) {
    bad_batch(fmt::format("{} output rows exceed max_step_seqs {}", out_rows, limits.max_step_seqs));
  }
  for (size_t t = 0; t < n; ++t) {
    if (token_seq[t] == -1) bad_batch(fmt::format("token {} belongs to no sequence", t));
  }
  if (limits.state_slots > 0) {
    slot_scratch.clear();
    for (const SeqChunk& c : batch.seqs) slot_scratch.push_back(c.state_slot);
    std::sort(slot_scratch.begin(), slot_scratch.end());
    if (auto dup = std::adjacent_find(slot_scratch.begin(), slot_scratch.end()); dup != slot_scratch.end()) {
      bad_batch(fmt::format("two sequences share state slot {}", *dup));
    }
  }
  // Two tokens writing one slot would leave one of them attending to the other's K/V.
  slot_scratch.assign(batch.slot_mapping.begin(), batch.slot_mapping.end());
  std::sort(slot_scratch.begin(), slot_scratch.end());
  if (auto dup = std::adjacent_find(slot_scratch.begin(), slot_scratch.end()); dup != slot_scratch.end()) {
    bad_batch(fmt::format("two tokens write KV slot {}", *dup));
  }
  if (limits.num_window_blocks > 0) {
    slot_scratch.assign(batch.window_slot_mapping.begin(), batch.window_slot_mapping.end());
    std::sort(slot_scratch.begin(), slot_scratch.end());
    if (auto dup = std::adjacent_find(slot_scratch.begin(), slot_scratch.end()); dup != slot_scratch.end()) {
      bad_batch(fmt::format("two tokens write window KV slot {}", *dup));
    }
  }
}

}  // namespace vks
