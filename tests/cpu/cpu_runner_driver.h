#pragma once
// Drives a CpuRunner as the scheduler would: sequences with their tokens, cached counts and blocks,
// steps built from chunks of them (cpu_runner_test.cpp, cpu_kv_q8_test.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/cpu/cpu_runner.h"
#include "engine/cpu/reference_ops.h"

namespace vks::test {

// One sequence as the scheduler would hold it: its tokens, how many are cached, its blocks.
struct Seq {
  std::vector<int32_t> tokens;   // prompt, then generated ids
  int32_t n_cached = 0;
  std::vector<int32_t> blocks;
  int32_t state_slot = -1;  // a model with recurrent layers: the runner's state slot it holds
  std::vector<std::vector<float>> logits;  // full logits after each step that produced output
};

// Builds steps from sequences and runs them. Blocks are handed out from a counter, so use one
// Driver per runner.
class Driver {
 public:
  explicit Driver(CpuRunner& runner) : runner_(runner) {}

  // Adds `n` tokens of `seq` (from seq.n_cached) to the next step; the last chunk of the known
  // tokens asks for full logits.
  void add(Seq& seq, int32_t n) {
    SeqChunk chunk;
    chunk.token_offset = static_cast<int32_t>(batch_.tokens.size());
    chunk.n_tokens = n;
    chunk.n_past = seq.n_cached;
    const int32_t end = seq.n_cached + n;
    while (static_cast<int32_t>(seq.blocks.size()) * runner_.block_size() < end) seq.blocks.push_back(next_block_++);
    chunk.block_table = seq.blocks;
    chunk.state_slot = seq.state_slot;
    chunk.logits = end == static_cast<int32_t>(seq.tokens.size()) ? LogitsMode::kFull : LogitsMode::kNone;
    for (int32_t i = 0; i < n; ++i) batch_.tokens.push_back(seq.tokens[static_cast<size_t>(seq.n_cached + i)]);
    batch_.seqs.push_back(chunk);
    members_.push_back(&seq);
  }

  // Runs the step; sequences that got logits append their greedy token.
  void run() {
    batch_.finalize(runner_.block_size());
    StepResult result;
    runner_.step(batch_, result);
    const size_t vocab = runner_.config().vocab_size;
    size_t full_row = 0;
    for (size_t s = 0; s < members_.size(); ++s) {
      Seq& seq = *members_[s];
      seq.n_cached += batch_.seqs[s].n_tokens;
      if (batch_.seqs[s].logits == LogitsMode::kNone) {
        EXPECT_EQ(result.argmax[s], -1);
        continue;
      }
      std::vector<float> row(result.logits.begin() + static_cast<std::ptrdiff_t>(full_row * vocab),
                             result.logits.begin() + static_cast<std::ptrdiff_t>((full_row + 1) * vocab));
      ++full_row;
      EXPECT_EQ(result.argmax[s], ref::argmax(row.data(), row.size()));
      seq.logits.push_back(std::move(row));
      seq.tokens.push_back(result.argmax[s]);
    }
    EXPECT_EQ(result.logits.size(), full_row * vocab);
    batch_ = StepBatch{};
    members_.clear();
  }

 private:
  CpuRunner& runner_;
  StepBatch batch_;
  std::vector<Seq*> members_;
  int32_t next_block_ = 0;
};

}  // namespace vks::test
