#include "engine/cpu/cpu_runner.h"

#include <string>
#include <unordered_set>

#include "engine/common/error.h"
#include "engine/cpu/cpu_model.h"
#include "engine/cpu/quant/qmatmul.h"
#include "engine/cpu/reference_ops.h"

namespace vks {
namespace {

// Serving runs the integer kernels (activations quantized per block, as llama.cpp); F32/F16/BF16
// weights give ref::matmul's bits there too.
constexpr MatmulFn kQuantizedMatmul =
    static_cast<void (*)(const TensorRef&, const float*, size_t, float*, ThreadPool*)>(&cpuq::qmatmul);

[[noreturn]] void bad_batch(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "invalid step batch: " + what);
}

}  // namespace

CpuRunner::CpuRunner(const LlamaModel& model, CpuRunnerOptions options)
    : model_(model), options_(options), pool_(options.threads) {
  if (options_.block_size <= 0 || options_.num_blocks <= 0 || options_.max_step_tokens <= 0 ||
      options_.max_step_seqs <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "CPU runner options must be positive (block_size, num_blocks, max_step_tokens, max_step_seqs)");
  }
  vectors_ = std::make_unique<CpuModelVectors>(model);
  const size_t slots = static_cast<size_t>(options_.num_blocks) * static_cast<size_t>(options_.block_size);
  for (size_t l = 0; l < model.config().n_layers; ++l) {
    key_pool_.emplace_back(slots * model.config().kv_dim());
    value_pool_.emplace_back(slots * model.config().kv_dim());
  }
}

void CpuRunner::validate(const StepBatch& batch) const {
  const LlamaConfig& c = config();
  const size_t n = batch.tokens.size();
  if (n > static_cast<size_t>(options_.max_step_tokens)) {
    bad_batch(std::to_string(n) + " tokens, more than max_step_tokens " + std::to_string(options_.max_step_tokens));
  }
  if (batch.seqs.size() > static_cast<size_t>(options_.max_step_seqs)) {
    bad_batch(std::to_string(batch.seqs.size()) + " sequences, more than max_step_seqs " +
              std::to_string(options_.max_step_seqs));
  }
  if (batch.positions.size() != n || batch.slot_mapping.size() != n) {
    bad_batch("positions/slot_mapping do not match tokens (call StepBatch::finalize)");
  }
  for (const int32_t t : batch.tokens) {
    if (t < 0 || static_cast<uint32_t>(t) >= c.vocab_size) bad_batch("token id " + std::to_string(t) + " out of range");
  }
  std::vector<bool> covered(n, false);
  const int64_t bs = options_.block_size;
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SeqChunk& seq = batch.seqs[s];
    const std::string name = "seq " + std::to_string(s) + ": ";
    if (seq.n_tokens <= 0 || seq.token_offset < 0 || seq.n_past < 0 ||
        static_cast<int64_t>(seq.token_offset) + seq.n_tokens > static_cast<int64_t>(n)) {
      bad_batch(name + "token range out of bounds");
    }
    const int64_t end = static_cast<int64_t>(seq.n_past) + seq.n_tokens;
    if (static_cast<int64_t>(seq.block_table.size()) * bs < end) {
      bad_batch(name + "block table covers fewer than " + std::to_string(end) + " positions");
    }
    for (int64_t b = 0; b < (end + bs - 1) / bs; ++b) {
      const int32_t block = seq.block_table[static_cast<size_t>(b)];
      if (block < 0 || block >= options_.num_blocks) bad_batch(name + "block id " + std::to_string(block) + " out of range");
    }
    for (int32_t i = 0; i < seq.n_tokens; ++i) {
      const size_t t = static_cast<size_t>(seq.token_offset + i);
      const int64_t pos = seq.n_past + i;
      if (covered[t]) bad_batch(name + "token " + std::to_string(t) + " belongs to two sequences");
      covered[t] = true;
      const int64_t slot = static_cast<int64_t>(seq.block_table[static_cast<size_t>(pos / bs)]) * bs + pos % bs;
      if (batch.positions[t] != pos || batch.slot_mapping[t] != slot) {
        bad_batch(name + "positions/slot_mapping disagree with n_past and the block table");
      }
    }
  }
  for (size_t t = 0; t < n; ++t) {
    if (!covered[t]) bad_batch("token " + std::to_string(t) + " belongs to no sequence");
  }
  std::unordered_set<int32_t> slots;
  for (const int32_t slot : batch.slot_mapping) {
    if (!slots.insert(slot).second) bad_batch("two tokens write KV slot " + std::to_string(slot));
  }
}

namespace {

// One layer's paged pool: token t's rows go to its slot, and its attention gathers its sequence's
// positions 0..pos through the block table.
class PagedKv final : public LayerKv {
 public:
  PagedKv(const LlamaConfig& c, const StepBatch& batch, const std::vector<size_t>& seq_of, size_t block_size,
          float* keys, float* values)
      : c_(c), batch_(batch), seq_of_(seq_of), block_size_(block_size), keys_(keys), values_(values) {}
  void store(size_t t, const float* k, const float* v) override {
    const size_t slot = static_cast<size_t>(batch_.slot_mapping[t]);
    std::copy_n(k, c_.kv_dim(), keys_ + slot * c_.kv_dim());
    std::copy_n(v, c_.kv_dim(), values_ + slot * c_.kv_dim());
  }
  void attend(size_t t, const float* q, const ref::AttentionParams& p, float* out) override {
    const SeqChunk& seq = batch_.seqs[seq_of_[t]];
    const size_t kv_dim = c_.kv_dim();
    const size_t pos = static_cast<size_t>(batch_.positions[t]);
    const size_t first = ref::window_start(pos, p.window);  // a window layer reads only its window
    const size_t n_ctx = pos + 1 - first;
    std::vector<float> keys(n_ctx * kv_dim);
    std::vector<float> values(n_ctx * kv_dim);
    ref::gather_paged_rows(keys_, seq.block_table, block_size_, first, n_ctx, kv_dim, keys.data());
    ref::gather_paged_rows(values_, seq.block_table, block_size_, first, n_ctx, kv_dim, values.data());
    ref::attention(out, q, keys.data(), values.data(), n_ctx, p);
  }

 private:
  const LlamaConfig& c_;
  const StepBatch& batch_;
  const std::vector<size_t>& seq_of_;
  size_t block_size_;
  float* keys_;
  float* values_;
};

}  // namespace

void CpuRunner::step(const StepBatch& batch, StepResult& out) {
  validate(batch);
  const LlamaConfig& c = config();
  const size_t n = batch.tokens.size();

  // Which sequence each token belongs to (for its block table).
  std::vector<size_t> seq_of(n);
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    for (int32_t i = 0; i < batch.seqs[s].n_tokens; ++i) seq_of[static_cast<size_t>(batch.seqs[s].token_offset + i)] = s;
  }

  CpuActivations acts;
  acts.resize(c, n);
  cpu_embed(model_, batch.tokens.data(), acts);
  for (size_t l = 0; l < c.n_layers; ++l) {
    PagedKv kv(c, batch, seq_of, static_cast<size_t>(options_.block_size), key_pool_[l].data(), value_pool_[l].data());
    cpu_layer(model_, *vectors_, l, batch.positions.data(), acts, kv, &pool_, kQuantizedMatmul);
  }

  // Logits only for the last token of each sequence that wants output, in one matmul.
  std::vector<size_t> outputs;  // sequences with logits != kNone
  std::vector<size_t> rows;     // their last tokens
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    if (batch.seqs[s].logits == LogitsMode::kNone || batch.seqs[s].logits == LogitsMode::kHidden) continue;
    outputs.push_back(s);
    rows.push_back(static_cast<size_t>(batch.seqs[s].token_offset + batch.seqs[s].n_tokens - 1));
  }
  const size_t vocab = c.vocab_size;
  std::vector<float> logits(outputs.size() * vocab);  // [n_outputs, vocab]
  cpu_logits(model_, *vectors_, acts, rows.data(), rows.size(), logits.data(), &pool_, kQuantizedMatmul);

  out.argmax.assign(batch.seqs.size(), -1);
  out.logits.clear();
  for (size_t o = 0; o < outputs.size(); ++o) {
    const float* row = &logits[o * vocab];
    out.argmax[outputs[o]] = ref::argmax(row, vocab);
    if (batch.seqs[outputs[o]].logits == LogitsMode::kFull) out.logits.insert(out.logits.end(), row, row + vocab);
  }
  // Embeddings: the final-normed hidden state of every token of the kHidden sequences.
  out.hidden.clear();
  const size_t dim = c.dim;
  for (const SeqChunk& seq : batch.seqs) {
    if (seq.logits != LogitsMode::kHidden) continue;
    for (int32_t i = 0; i < seq.n_tokens; ++i) {
      const size_t t = static_cast<size_t>(seq.token_offset + i);
      const size_t at = out.hidden.size();
      out.hidden.resize(at + dim);
      ref::rmsnorm(&out.hidden[at], &acts.x[t * dim], vectors_->output_norm.data(), dim, c.norm_eps);
    }
  }
}

}  // namespace vks
