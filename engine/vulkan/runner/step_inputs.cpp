#include "engine/vulkan/runner/step_inputs.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/common/error.h"

namespace vks {
namespace {

[[noreturn]] void bad_batch(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "invalid step batch: " + what);
}

void check_seq(const StepBatch& batch, const StepLimits& limits, size_t s, std::vector<int32_t>& token_seq) {
  const SeqChunk& c = batch.seqs[s];
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());
  if (c.n_tokens <= 0 || c.token_offset < 0 || int64_t{c.token_offset} + c.n_tokens > n_tokens) {
    bad_batch(fmt::format("seq {}: tokens [{}, {}+{}) outside the batch of {}", s, c.token_offset,
                          c.token_offset, c.n_tokens, n_tokens));
  }
  if (c.n_past < 0) bad_batch(fmt::format("seq {}: negative n_past {}", s, c.n_past));
  const int64_t len = int64_t{c.n_past} + c.n_tokens;
  const int64_t max_len = int64_t{limits.max_blocks_per_seq} * limits.block_size;
  if (len > max_len) {
    bad_batch(fmt::format("seq {}: length {} exceeds the longest sequence {}", s, len, max_len));
  }
  const int64_t blocks_needed = (len + limits.block_size - 1) / limits.block_size;
  if (static_cast<int64_t>(c.block_table.size()) < blocks_needed) {
    bad_batch(fmt::format("seq {}: block table has {} blocks, positions up to {} need {}", s,
                          c.block_table.size(), len - 1, blocks_needed));
  }
  for (int64_t b = 0; b < blocks_needed; ++b) {
    const int32_t block = c.block_table[static_cast<size_t>(b)];
    if (block < 0 || block >= limits.num_blocks) {
      bad_batch(fmt::format("seq {}: block {} out of the pool [0, {})", s, block, limits.num_blocks));
    }
  }
  for (int32_t i = 0; i < c.n_tokens; ++i) {
    const size_t t = static_cast<size_t>(c.token_offset + i);
    if (token_seq[t] != -1) bad_batch(fmt::format("token {} belongs to seqs {} and {}", t, token_seq[t], s));
    token_seq[t] = static_cast<int32_t>(s);
    const int32_t pos = c.n_past + i;
    const int32_t slot = c.block_table[static_cast<size_t>(pos / limits.block_size)] * limits.block_size +
                         pos % limits.block_size;
    if (batch.positions[t] != pos || batch.slot_mapping[t] != slot) {
      bad_batch(fmt::format("token {}: position {} / slot {} differ from {} / {} (call finalize())", t,
                            batch.positions[t], batch.slot_mapping[t], pos, slot));
    }
  }
}

}  // namespace

void pack_step_inputs(const StepBatch& batch, const StepLimits& limits, StepInputs& out) {
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
  for (size_t t = 0; t < n; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= limits.vocab_size) {
      bad_batch(fmt::format("token {} has id {} outside the vocabulary [0, {})", t, batch.tokens[t],
                            limits.vocab_size));
    }
  }

  out.n_tokens = static_cast<int32_t>(n);
  out.n_seqs = static_cast<int32_t>(batch.seqs.size());
  out.token_seq.assign(n, -1);
  out.block_tables.assign(batch.seqs.size() * static_cast<size_t>(limits.max_blocks_per_seq), 0);
  out.out_rows.clear();
  out.out_seq.clear();
  out.n_full = 0;
  out.hidden_rows.clear();
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SeqChunk& c = batch.seqs[s];
    check_seq(batch, limits, s, out.token_seq);
    const size_t used = std::min(c.block_table.size(), static_cast<size_t>(limits.max_blocks_per_seq));
    std::copy_n(c.block_table.begin(), used,
                out.block_tables.begin() + static_cast<std::ptrdiff_t>(s * static_cast<size_t>(limits.max_blocks_per_seq)));
    if (c.logits == LogitsMode::kHidden) {
      for (int32_t i = 0; i < c.n_tokens; ++i) out.hidden_rows.push_back(c.token_offset + i);
    } else if (c.logits != LogitsMode::kNone) {
      out.out_rows.push_back(c.token_offset + c.n_tokens - 1);
      out.out_seq.push_back(static_cast<int32_t>(s));
      if (c.logits == LogitsMode::kFull) ++out.n_full;
    }
  }
  out.longest_keys = 0;
  for (size_t t = 0; t < n; ++t) {
    if (out.token_seq[t] == -1) bad_batch(fmt::format("token {} belongs to no sequence", t));
    out.longest_keys = std::max(out.longest_keys, batch.positions[t] + 1);
  }
}

}  // namespace vks
