#pragma once
// Test doubles for the engine: a tokenizer over a fixed list of pieces and a model runner whose
// logits are a pure function of the sequence's history as read back from its own paged KV pool.
// Because the runner reads the history through the block tables and slot mappings the scheduler
// produced, a wrong block table, a prefix-cache hit on the wrong blocks or an overwritten cached
// block changes the logits, and with them the generated tokens.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/model/model_runner.h"
#include "engine/tokenizer/tokenizer.h"

namespace vks::test {

// Ids 0 = <unk>, 1 = <s> (BOS), 2 = </s> (EOS), then the given pieces (raw bytes, may be partial
// UTF-8). encode() is greedy longest match over the pieces.
class FakeTokenizer : public Tokenizer {
 public:
  explicit FakeTokenizer(std::vector<std::string> pieces);
  // 3 + 26 letters + space + a few more: "a".."z", " ", "." and padding up to vocab_size.
  static FakeTokenizer letters(int32_t vocab_size = 64);

  std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special = false) const override;
  std::string decode(std::span<const TokenId> ids) const override;
  std::string token_bytes(TokenId id) const override;
  std::string_view token_text(TokenId id) const override;
  TokenType token_type(TokenId id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
  TokenId bos() const override { return 1; }
  TokenId eos() const override { return 2; }
  TokenId unk() const override { return 0; }
  bool is_eog(TokenId id) const override { return id == 2; }
  bool add_bos_default() const override { return true; }

 private:
  std::vector<std::string> pieces_;
};

// Logits of the next token given the full history (prompt + generated) of a sequence.
using LogitsFn = std::function<void(std::span<const int32_t> history, std::span<float> logits)>;
// Default: pseudo-random logits hashed from the whole history, spread enough that greedy is unique.
void hashed_logits(std::span<const int32_t> history, std::span<float> logits);

struct FakeRunnerOptions {
  int32_t vocab_size = 64;
  int32_t context_length = 1024;
  int32_t block_size = 4;
  int32_t num_blocks = 256;
  int32_t max_step_tokens = 512;
  int32_t max_step_seqs = 64;
  std::chrono::microseconds step_delay{0};
};

// What one step looked like, for scheduling tests.
struct StepRecord {
  struct Seq {
    int32_t first_token = 0;  // tokens[token_offset]
    int32_t n_tokens = 0;
    int32_t n_past = 0;
    LogitsMode logits = LogitsMode::kNone;
    int32_t n_verify = 0;
  };
  std::vector<Seq> seqs;
  int32_t n_tokens = 0;
};

class FakeRunner : public ModelRunner {
 public:
  explicit FakeRunner(FakeRunnerOptions options, LogitsFn fn = hashed_logits);
  const LlamaConfig& config() const override { return config_; }
  std::string device_name() const override { return "fake"; }
  int32_t block_size() const override { return options_.block_size; }
  int32_t num_blocks() const override { return options_.num_blocks; }
  uint64_t kv_bytes_per_token() const override { return 64; }
  std::string kv_type() const override { return "f16"; }
  int32_t max_step_tokens() const override { return options_.max_step_tokens; }
  int32_t max_step_seqs() const override { return options_.max_step_seqs; }
  void step(const StepBatch& batch, StepResult& out) override;

  // Shared with the test thread (the runner itself moves into the engine).
  struct Shared {
    std::mutex mu;
    std::vector<StepRecord> steps;
    int32_t fail_steps = 0;            // the next n steps throw Error(kDevice)
    std::atomic<int64_t> delay_us{0};  // extra time per step
    std::atomic<bool> hold{false};     // a step waits while set (lets a test queue work first)
    std::atomic<int32_t> steps_started{0};  // counted before the hold: a held step is in flight
  };
  std::shared_ptr<Shared> shared() const { return shared_; }

 private:
  FakeRunnerOptions options_;
  LogitsFn fn_;
  LlamaConfig config_;
  std::vector<int32_t> kv_;  // [num_blocks * block_size] token id stored in each slot, -1 = never written
  std::shared_ptr<Shared> shared_;
};

// The greedy continuation computed straight from the logits function (the reference).
std::vector<int32_t> greedy_reference(const LogitsFn& fn, int32_t vocab, std::vector<int32_t> prompt, int32_t n,
                                      int32_t eos = -1);

}  // namespace vks::test
