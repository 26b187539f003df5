#include "engine/cpu/cpu_runner.h"

#include <string>
#include <unordered_set>

#include "engine/common/error.h"
#include "engine/cpu/cpu_model.h"
#include "engine/cpu/reference_ops.h"

namespace vks {
namespace {

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
  const size_t slots = static_cast<size_t>(options_.num_blocks) * static_cast<size_t>(options_.block_size);
  for (const LayerWeights& layer : model.weights().layers) {
    attn_norm_.push_back(dequantize_vector(layer.attn_norm));
    ffn_norm_.push_back(dequantize_vector(layer.ffn_norm));
    key_pool_.emplace_back(slots * model.config().kv_dim());
    value_pool_.emplace_back(slots * model.config().kv_dim());
  }
  output_norm_ = dequantize_vector(model.weights().output_norm);
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

void CpuRunner::step(const StepBatch& batch, StepResult& out) {
  validate(batch);
  const LlamaConfig& c = config();
  const LlamaWeights& w = model_.weights();
  const size_t n = batch.tokens.size();
  const size_t dim = c.dim;
  const size_t q_dim = c.q_dim();
  const size_t kv_dim = c.kv_dim();
  const size_t hidden = c.hidden_dim;

  // Activations of every token of the step, token-major: [n, width].
  std::vector<float> x(n * dim);        // residual stream
  std::vector<float> xb(n * dim);       // normalized input of a sublayer
  std::vector<float> q(n * q_dim);
  std::vector<float> k(n * kv_dim);
  std::vector<float> v(n * kv_dim);
  std::vector<float> att(n * q_dim);    // attention output
  std::vector<float> proj(n * dim);     // sublayer output before the residual add
  std::vector<float> gate(n * hidden);
  std::vector<float> up(n * hidden);

  // Which sequence each token belongs to (for its block table).
  std::vector<size_t> seq_of(n);
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    for (int32_t i = 0; i < batch.seqs[s].n_tokens; ++i) seq_of[static_cast<size_t>(batch.seqs[s].token_offset + i)] = s;
  }

  // Embedding.
  for (size_t t = 0; t < n; ++t) dequantize_tensor_row(w.token_embd, static_cast<uint64_t>(batch.tokens[t]), &x[t * dim]);

  for (size_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& layer = w.layers[l];
    // Attention RMSNorm.
    for (size_t t = 0; t < n; ++t) ref::rmsnorm(&xb[t * dim], &x[t * dim], attn_norm_[l].data(), dim, c.norm_eps);
    // Q, K, V projections.
    ref::matmul(layer.wq, xb.data(), n, q.data(), &pool_);
    ref::matmul(layer.wk, xb.data(), n, k.data(), &pool_);
    ref::matmul(layer.wv, xb.data(), n, v.data(), &pool_);
    // Rotary embedding, then K and V into their cache slots.
    for (size_t t = 0; t < n; ++t) {
      const int32_t pos = batch.positions[t];
      ref::rope_norm(&q[t * q_dim], c.n_heads, c.head_dim, c.rope_dim, pos, c.rope_freq_base, c.rope_freq_scale);
      ref::rope_norm(&k[t * kv_dim], c.n_kv_heads, c.head_dim, c.rope_dim, pos, c.rope_freq_base, c.rope_freq_scale);
      const size_t slot = static_cast<size_t>(batch.slot_mapping[t]);
      std::copy_n(&k[t * kv_dim], kv_dim, &key_pool_[l][slot * kv_dim]);
      std::copy_n(&v[t * kv_dim], kv_dim, &value_pool_[l][slot * kv_dim]);
    }
    // Attention of each token over its sequence's positions 0..pos, gathered from the blocks.
    pool_.parallel_for(n, [&](size_t t) {
      const SeqChunk& seq = batch.seqs[seq_of[t]];
      const size_t n_ctx = static_cast<size_t>(batch.positions[t]) + 1;
      std::vector<float> keys(n_ctx * kv_dim);
      std::vector<float> values(n_ctx * kv_dim);
      const size_t bs = static_cast<size_t>(options_.block_size);
      ref::gather_paged_rows(key_pool_[l].data(), seq.block_table, bs, n_ctx, kv_dim, keys.data());
      ref::gather_paged_rows(value_pool_[l].data(), seq.block_table, bs, n_ctx, kv_dim, values.data());
      ref::attention(&att[t * q_dim], &q[t * q_dim], keys.data(), values.data(), n_ctx, c.n_heads, c.n_kv_heads,
                     c.head_dim);
    });
    // Output projection and residual.
    ref::matmul(layer.wo, att.data(), n, proj.data(), &pool_);
    for (size_t i = 0; i < n * dim; ++i) x[i] += proj[i];

    // FFN RMSNorm.
    for (size_t t = 0; t < n; ++t) ref::rmsnorm(&xb[t * dim], &x[t * dim], ffn_norm_[l].data(), dim, c.norm_eps);
    // SwiGLU feed-forward.
    ref::matmul(layer.w_gate, xb.data(), n, gate.data(), &pool_);
    ref::matmul(layer.w_up, xb.data(), n, up.data(), &pool_);
    ref::swiglu(gate.data(), gate.data(), up.data(), n * hidden);
    ref::matmul(layer.w_down, gate.data(), n, proj.data(), &pool_);
    // Residual.
    for (size_t i = 0; i < n * dim; ++i) x[i] += proj[i];
  }

  // Final norm and logits, only for the last token of each sequence that wants output (all of
  // them in one matmul, so the output matrix is dequantized once per step).
  std::vector<size_t> outputs;  // sequences with logits != kNone
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    if (batch.seqs[s].logits != LogitsMode::kNone) outputs.push_back(s);
  }
  std::vector<float> last(outputs.size() * dim);  // [n_outputs, dim] normalized final states
  for (size_t o = 0; o < outputs.size(); ++o) {
    const SeqChunk& seq = batch.seqs[outputs[o]];
    const size_t t = static_cast<size_t>(seq.token_offset + seq.n_tokens - 1);
    ref::rmsnorm(&last[o * dim], &x[t * dim], output_norm_.data(), dim, c.norm_eps);
  }
  const size_t vocab = c.vocab_size;
  std::vector<float> logits(outputs.size() * vocab);  // [n_outputs, vocab]
  ref::matmul(w.output, last.data(), outputs.size(), logits.data(), &pool_);

  out.argmax.assign(batch.seqs.size(), -1);
  out.logits.clear();
  for (size_t o = 0; o < outputs.size(); ++o) {
    const float* row = &logits[o * vocab];
    out.argmax[outputs[o]] = ref::argmax(row, vocab);
    if (batch.seqs[outputs[o]].logits == LogitsMode::kFull) out.logits.insert(out.logits.end(), row, row + vocab);
  }
}

}  // namespace vks
