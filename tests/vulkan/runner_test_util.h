#pragma once
// Test driver for a ModelRunner: greedy generation of several sequences, batched or alone, with
// chunked prefill, over a toy block allocator that hands out blocks in a shuffled order (so the
// physical placement of a sequence differs between runs that must agree).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/model_runner.h"

namespace vks::test {

struct GenerateOptions {
  int n_gen = 16;          // tokens generated per sequence
  int chunk = 1 << 30;     // prefill chunk length
  bool batched = true;     // all sequences in the same steps, else one after another
  bool full_logits = false;  // kFull instead of kArgmax; logits rows are recorded
  uint32_t block_seed = 1;   // order of the free block list
};

struct SeqResult {
  std::vector<int32_t> generated;
  std::vector<std::vector<float>> logits;  // one row per produced token (when full_logits)
};

class GreedyDriver {
 public:
  GreedyDriver(ModelRunner& runner, uint32_t block_seed) : runner_(runner) {
    free_.resize(static_cast<size_t>(runner.num_blocks()));
    std::iota(free_.begin(), free_.end(), 0);
    std::shuffle(free_.begin(), free_.end(), std::mt19937(block_seed));
  }

  std::vector<SeqResult> run(const std::vector<std::vector<int32_t>>& prompts, const GenerateOptions& o) {
    std::vector<SeqResult> results(prompts.size());
    if (o.batched) {
      std::vector<size_t> all(prompts.size());
      std::iota(all.begin(), all.end(), 0);
      run_group(prompts, all, o, results);
    } else {
      for (size_t s = 0; s < prompts.size(); ++s) run_group(prompts, {s}, o, results);
    }
    return results;
  }

 private:
  struct Live {
    size_t index;
    std::vector<int32_t> tokens;  // prompt then generated
    int32_t n_prompt;
    int32_t n_past = 0;
    std::vector<int32_t> blocks;
  };

  void ensure_blocks(Live& s, int32_t len) {
    const int32_t bs = runner_.block_size();
    while (static_cast<int32_t>(s.blocks.size()) * bs < len) {
      if (free_.empty()) throw std::runtime_error("test driver: out of KV blocks");
      s.blocks.push_back(free_.back());
      free_.pop_back();
    }
  }

  void run_group(const std::vector<std::vector<int32_t>>& prompts, const std::vector<size_t>& which,
                 const GenerateOptions& o, std::vector<SeqResult>& results) {
    std::vector<Live> live;
    for (size_t i : which) live.push_back(Live{i, prompts[i], static_cast<int32_t>(prompts[i].size()), 0, {}});
    for (;;) {
      StepBatch batch;
      std::vector<Live*> in_step;
      for (Live& s : live) {
        const int32_t len = static_cast<int32_t>(s.tokens.size());
        if (static_cast<int32_t>(results[s.index].generated.size()) >= o.n_gen) continue;
        const int32_t remaining = len - s.n_past;  // prompt left, or the last generated token
        int32_t n = std::min({remaining, o.chunk, runner_.max_step_tokens() - static_cast<int32_t>(batch.tokens.size())});
        if (n <= 0 || static_cast<int32_t>(batch.seqs.size()) >= runner_.max_step_seqs()) continue;
        ensure_blocks(s, s.n_past + n);
        SeqChunk c;
        c.token_offset = static_cast<int32_t>(batch.tokens.size());
        c.n_tokens = n;
        c.n_past = s.n_past;
        c.block_table = s.blocks;
        c.state_slot = static_cast<int32_t>(&s - live.data());  // a recurrent model's: one per live sequence
        const bool ends_known = s.n_past + n == len;
        c.logits = !ends_known ? LogitsMode::kNone : (o.full_logits ? LogitsMode::kFull : LogitsMode::kArgmax);
        batch.tokens.insert(batch.tokens.end(), s.tokens.begin() + s.n_past, s.tokens.begin() + s.n_past + n);
        batch.seqs.push_back(c);
        in_step.push_back(&s);
      }
      if (in_step.empty()) break;
      batch.finalize(runner_.block_size());
      StepResult r;
      runner_.step(batch, r);
      size_t full_row = 0;
      for (size_t k = 0; k < in_step.size(); ++k) {
        Live& s = *in_step[k];
        s.n_past += batch.seqs[k].n_tokens;
        if (batch.seqs[k].logits == LogitsMode::kNone) continue;
        const int32_t next = r.argmax.at(k);
        results[s.index].generated.push_back(next);
        s.tokens.push_back(next);
        if (batch.seqs[k].logits == LogitsMode::kFull) {
          const size_t vocab = runner_.config().vocab_size;
          results[s.index].logits.emplace_back(r.logits.begin() + static_cast<std::ptrdiff_t>(full_row * vocab),
                                               r.logits.begin() + static_cast<std::ptrdiff_t>((full_row + 1) * vocab));
          ++full_row;
        }
      }
    }
    for (Live& s : live) free_.insert(free_.end(), s.blocks.begin(), s.blocks.end());
  }

  ModelRunner& runner_;
  std::vector<int32_t> free_;
};

// The reference ids file: '#' comment lines, then the prompt line, then the generated line.
inline std::vector<std::vector<int32_t>> read_id_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<int32_t>> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::vector<int32_t> ids;
    int32_t id = 0;
    while (ss >> id) ids.push_back(id);
    if (!ids.empty()) lines.push_back(ids);
  }
  return lines;
}

// Logits against a reference: the largest difference within `ratio` (3e-3 unless a caller says
// why) of the reference's standard deviation (a scale-free bound that holds on every kernel
// family); prints the ratio.
inline void expect_logits_near_reference(const std::vector<float>& got, const std::vector<float>& want,
                                         const std::string& what, double ratio = 3e-3) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double mean = 0, var = 0, max_diff = 0;
  for (float w : want) mean += w;
  mean /= static_cast<double>(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    var += (want[i] - mean) * (want[i] - mean);
    max_diff = std::max(max_diff, std::fabs(double(got[i]) - want[i]));
  }
  const double spread = std::sqrt(var / static_cast<double>(want.size()));
  std::printf("%s: max |logit diff| %.3g, reference std %.3g (ratio %.3g)\n", what.c_str(), max_diff, spread,
              max_diff / spread);
  EXPECT_LE(max_diff, ratio * spread) << what;
}

// BOS then random ids below `vocab` (seeded), `len` tokens in all.
inline std::vector<int32_t> random_prompt(int len, uint32_t seed, uint32_t vocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p{1};
  while (static_cast<int>(p.size()) < len) p.push_back(static_cast<int32_t>(3 + rng() % (vocab - 3)));
  return p;
}

// The same generated ids and the same logits, bit for bit, for every sequence.
inline void expect_same_results(const std::vector<SeqResult>& a, const std::vector<SeqResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t s = 0; s < a.size(); ++s) {
    EXPECT_EQ(a[s].generated, b[s].generated) << "sequence " << s;
    ASSERT_EQ(a[s].logits.size(), b[s].logits.size()) << "sequence " << s;
    for (size_t i = 0; i < a[s].logits.size(); ++i) {
      ASSERT_EQ(a[s].logits[i].size(), b[s].logits[i].size());
      EXPECT_EQ(0, std::memcmp(a[s].logits[i].data(), b[s].logits[i].data(), a[s].logits[i].size() * sizeof(float)))
          << "sequence " << s << " logits of token " << i << " differ";
    }
  }
}

// Greedy runs of `prompts` (n_gen tokens each, full logits) one sequence at a time, then all batched
// (blocks shuffled by block_seed and block_seed + 1): the batched results must equal the lone ones
// bit for bit. Returns the lone results.
inline std::vector<SeqResult> expect_batched_equals_alone(ModelRunner& runner,
                                                          const std::vector<std::vector<int32_t>>& prompts, int n_gen,
                                                          uint32_t block_seed) {
  GenerateOptions o;
  o.n_gen = n_gen;
  o.full_logits = true;
  o.batched = false;
  GreedyDriver alone_driver(runner, block_seed);
  const std::vector<SeqResult> alone = alone_driver.run(prompts, o);
  o.batched = true;
  GreedyDriver batched_driver(runner, block_seed + 1);
  expect_same_results(alone, batched_driver.run(prompts, o));
  return alone;
}

// The same with the prompts prefilled in one piece, in chunks of 7 and token by token.
inline void expect_chunked_equals_whole(ModelRunner& runner, const std::vector<std::vector<int32_t>>& prompts,
                                        int n_gen, uint32_t block_seed) {
  GenerateOptions o;
  o.n_gen = n_gen;
  o.full_logits = true;
  GreedyDriver whole_driver(runner, block_seed);
  const std::vector<SeqResult> whole = whole_driver.run(prompts, o);
  for (const int chunk : {7, 1}) {
    o.chunk = chunk;
    GreedyDriver chunked_driver(runner, block_seed + static_cast<uint32_t>(chunk));
    expect_same_results(whole, chunked_driver.run(prompts, o));
  }
}

}  // namespace vks::test
