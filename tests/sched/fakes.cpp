#include "tests/sched/fakes.h"

#include <algorithm>
#include <thread>

#include "engine/common/error.h"

namespace vks::test {

FakeTokenizer::FakeTokenizer(std::vector<std::string> pieces) {
  pieces_ = {"<unk>", "<s>", "</s>"};
  pieces_.insert(pieces_.end(), pieces.begin(), pieces.end());
}

FakeTokenizer FakeTokenizer::letters(int32_t vocab_size) {
  std::vector<std::string> p;
  for (char c = 'a'; c <= 'z'; ++c) p.emplace_back(1, c);
  p.emplace_back(" ");
  p.emplace_back(".");
  while (static_cast<int32_t>(p.size()) + 3 < vocab_size) {
    std::string w = std::to_string(p.size());
    w.insert(w.begin(), 'w');
    p.push_back(std::move(w));
  }
  return FakeTokenizer(std::move(p));
}

std::vector<TokenId> FakeTokenizer::encode(std::string_view text, bool add_bos, bool) const {
  std::vector<TokenId> ids;
  if (add_bos) ids.push_back(bos());
  size_t i = 0;
  while (i < text.size()) {
    int32_t best = -1;
    size_t best_len = 0;
    for (size_t t = 3; t < pieces_.size(); ++t) {
      const std::string& p = pieces_[t];
      if (p.size() > best_len && text.compare(i, p.size(), p) == 0) {
        best = static_cast<int32_t>(t);
        best_len = p.size();
      }
    }
    if (best < 0) {
      ids.push_back(unk());
      ++i;
    } else {
      ids.push_back(best);
      i += best_len;
    }
  }
  return ids;
}

std::string FakeTokenizer::decode(std::span<const TokenId> ids) const {
  std::string s;
  for (TokenId id : ids) s += token_bytes(id);
  return s;
}

std::string FakeTokenizer::token_bytes(TokenId id) const {
  if (id < 3 || id >= vocab_size()) return {};
  return pieces_[id];
}

std::string_view FakeTokenizer::token_text(TokenId id) const {
  return id >= 0 && id < vocab_size() ? std::string_view(pieces_[id]) : std::string_view();
}

TokenType FakeTokenizer::token_type(TokenId id) const { return id < 3 ? TokenType::kControl : TokenType::kNormal; }

void hashed_logits(std::span<const int32_t> history, std::span<float> logits) {
  uint64_t h = 1469598103934665603ULL;
  for (int32_t t : history) h = (h ^ static_cast<uint32_t>(t)) * 1099511628211ULL;
  for (size_t v = 0; v < logits.size(); ++v) {
    uint64_t x = h + 0x9e3779b97f4a7c15ULL * (v + 1);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    logits[v] = static_cast<float>(static_cast<double>(x >> 11) * 0x1.0p-53 * 8.0 - 4.0);
  }
}

FakeRunner::FakeRunner(FakeRunnerOptions options, LogitsFn fn)
    : options_(options), fn_(std::move(fn)), shared_(std::make_shared<Shared>()) {
  config_.architecture = "llama";
  config_.name = "fake";
  config_.vocab_size = static_cast<uint32_t>(options_.vocab_size);
  config_.context_length = static_cast<uint32_t>(options_.context_length);
  config_.dim = 8;
  config_.n_layers = 1;
  config_.n_heads = 1;
  config_.n_kv_heads = 1;
  config_.head_dim = 8;
  kv_.assign(static_cast<size_t>(options_.num_blocks) * options_.block_size, -1);
  shared_->delay_us = options_.step_delay.count();
}

void FakeRunner::step(const StepBatch& batch, StepResult& out) {
  ++shared_->steps_started;
  while (shared_->hold) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  StepRecord rec;
  rec.n_tokens = static_cast<int32_t>(batch.tokens.size());
  {
    std::lock_guard lock(shared_->mu);
    if (shared_->fail_steps > 0) {
      --shared_->fail_steps;
      throw Error(ErrorCode::kDevice, "injected device failure");
    }
  }
  if (batch.tokens.empty() || batch.tokens.size() > static_cast<size_t>(options_.max_step_tokens) ||
      batch.seqs.size() > static_cast<size_t>(options_.max_step_seqs)) {
    throw Error(ErrorCode::kInvalidArgument, "fake runner: step exceeds its limits");
  }
  // Write every token into its slot first (as a real step writes K/V), then read each history.
  for (size_t i = 0; i < batch.tokens.size(); ++i) {
    const int32_t slot = batch.slot_mapping[i];
    if (slot < 0 || static_cast<size_t>(slot) >= kv_.size()) throw Error(ErrorCode::kInvalidArgument, "fake runner: bad slot");
    kv_[slot] = batch.tokens[i];
  }
  out.argmax.assign(batch.seqs.size(), -1);
  out.verify_argmax.clear();
  out.logits.clear();
  std::vector<float> row(options_.vocab_size);
  std::vector<int32_t> history;
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SeqChunk& c = batch.seqs[s];
    rec.seqs.push_back({batch.tokens[c.token_offset], c.n_tokens, c.n_past, c.logits, c.n_verify});
    if (c.logits == LogitsMode::kNone) continue;
    const int32_t len = c.n_past + c.n_tokens;
    if (len > options_.context_length) throw Error(ErrorCode::kInvalidArgument, "fake runner: past the context");
    history.clear();
    for (int32_t p = 0; p < len; ++p) {
      const size_t blk = static_cast<size_t>(p / options_.block_size);
      if (blk >= c.block_table.size()) throw Error(ErrorCode::kInvalidArgument, "fake runner: block table too short");
      const int32_t slot = c.block_table[blk] * options_.block_size + p % options_.block_size;
      history.push_back(kv_[slot]);
    }
    // Speculative verification: the greedy token after each of the n_verify tokens before the last.
    for (int32_t v = c.n_verify; v > 0; --v) {
      fn_(std::span<const int32_t>(history.data(), history.size() - static_cast<size_t>(v)), row);
      out.verify_argmax.push_back(static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin()));
      if (c.logits == LogitsMode::kFull) out.logits.insert(out.logits.end(), row.begin(), row.end());
    }
    fn_(history, row);
    out.argmax[s] = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    if (c.logits == LogitsMode::kFull) out.logits.insert(out.logits.end(), row.begin(), row.end());
  }
  if (const int64_t us = shared_->delay_us.load(); us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
  std::lock_guard lock(shared_->mu);
  shared_->steps.push_back(std::move(rec));
}

std::vector<int32_t> greedy_reference(const LogitsFn& fn, int32_t vocab, std::vector<int32_t> prompt, int32_t n, int32_t eos) {
  std::vector<int32_t> out;
  std::vector<float> row(vocab);
  for (int32_t i = 0; i < n; ++i) {
    fn(prompt, row);
    const int32_t t = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    out.push_back(t);
    if (t == eos) break;
    prompt.push_back(t);
  }
  return out;
}

}  // namespace vks::test
