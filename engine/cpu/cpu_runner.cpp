#include "engine/cpu/cpu_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>
#include <string>

#include "engine/common/cpu_count.h"
#include "engine/common/error.h"
#include "engine/cpu/cpu_model.h"
#include "engine/cpu/cpu_weights.h"
#include "engine/cpu/kv_quant.h"
#include "engine/cpu/paged_kv_layout.h"
#include "engine/cpu/quant/qmatmul.h"
#include "engine/cpu/reference_ops.h"
#include "engine/model/kv_pools.h"

namespace vks {
CpuRunner::CpuRunner(const LlamaModel& model, CpuRunnerOptions options)
    : model_(model), options_(options), pool_(options.threads > 0 ? options.threads : default_cpu_threads().threads),
      states_(model.config(), model.config().has_recurrent_layers()
                                  ? options.state_slots + std::max(options.state_checkpoints, 0)
                                  : 0) {
  if (options_.block_size <= 0 || options_.num_blocks <= 0 || options_.max_step_tokens <= 0 ||
      options_.max_step_seqs <= 0 || options_.state_slots <= 0 || options_.state_checkpoints < 0 ||
      options_.num_window_blocks < -1) {
    throw Error(ErrorCode::kInvalidArgument, "CPU runner options must be positive (block_size, num_blocks, "
                                             "max_step_tokens, max_step_seqs, state_slots; state_checkpoints >= 0, "
                                             "num_window_blocks >= -1)");
  }
  weights_ = std::make_unique<CpuWeights>(model, options_.weights_in_memory, options_.pack_weights,
                                          cpuq::active_isa(), &pool_);
  if (options_.adapt_decode_threads && pool_.size() > 1) {  // without the kernel's statistics: all threads always
    auto delay = std::make_unique<RunDelay>(pool_.worker_tids());
    if (delay->available()) run_delay_ = std::move(delay);
  }
  // No sequence can be longer than the pool: that is the only bound on a block table here. A step's
  // sequences run in the live state slots only; the checkpoint slots past them are copied to and from.
  const int32_t live_slots = model.config().has_recurrent_layers() ? options_.state_slots : 0;
  window_blocks_ = window_blocks_for(model.config(), options_);
  limits_ = StepLimits{static_cast<int32_t>(model.config().vocab_size), options_.block_size, options_.num_blocks,
                       options_.max_step_tokens, options_.max_step_seqs, options_.num_blocks, live_slots,
                       window_blocks_};
  vectors_ = std::make_unique<CpuModelVectors>(model);
  const size_t block_size = static_cast<size_t>(options_.block_size);
  const size_t kv_dim = model.config().kv_dim();
  require_kv_type_fits(model.config(), options_.kv_type);
  for (size_t l = 0; l < model.config().n_layers; ++l) {
    // A DeltaNet layer keeps no keys or values, nor does a layer that reads another's; a window-pool
    // layer keeps the window pool's blocks.
    const LayerSpec& spec = model.config().layers[l];
    const size_t blocks = in_window_pool(model.config(), l) && window_blocks_ > 0
                              ? static_cast<size_t>(window_blocks_)
                              : static_cast<size_t>(options_.num_blocks);
    const size_t rows = spec.mixer == Mixer::kAttention && !spec.attention.shares_kv() ? blocks * block_size * kv_dim : 0;
    if (quantized_kv()) {
      key_quants_.emplace_back(kv_plane_bytes(options_.kv_type, rows));
      value_quants_.emplace_back(kv_plane_bytes(options_.kv_type, rows));
      key_scales_.emplace_back(rows / cpu::kKvBlock);
      value_scales_.emplace_back(rows / cpu::kKvBlock);
    } else {
      key_pool_.emplace_back(rows);
      value_pool_.emplace_back(rows);
    }
  }
}

uint64_t CpuRunner::pool_row_bytes(KvType type, uint64_t kv_dim) {
  return type == KvType::kF16 ? kv_dim * sizeof(float) : kv_row_bytes(type, kv_dim);
}

uint64_t CpuRunner::kv_bytes_per_token() const {
  const LlamaConfig& c = model_.config();
  return pool_row_bytes(options_.kv_type, c.kv_dim()) * 2 * c.n_attention_layers();
}

uint64_t CpuRunner::kv_window_bytes_per_token() const {
  const LlamaConfig& c = model_.config();
  return window_blocks_ > 0 ? pool_row_bytes(options_.kv_type, c.kv_dim()) * 2 * n_window_pool_layers(c) : 0;
}

int32_t CpuRunner::window_blocks_for(const LlamaConfig& c, const CpuRunnerOptions& options) {
  return resolve_window_blocks(c, options.num_window_blocks, options.block_size, options.max_step_seqs,
                               options.max_step_tokens, options.num_blocks);
}

namespace {

// Where one layer's paged pool puts and finds a step's tokens: token t's rows go to its slot
// (blocks of c.kv_dim() values per position, by KV head: paged_kv_layout.h), and its attention reads
// its sequence's positions [first, pos] through the block table (a window layer only its window); a
// DeltaNet layer's state is its sequence's slot. The pools' element type is the subclass's.
class PagedRows : public LayerKv {
 public:
  RecurrentState recurrent_state(size_t t) override {
    return states_.at(layer_, batch_.seqs[static_cast<size_t>(seq_of_[t])].state_slot);
  }

 protected:
  // window_pool: the layer's K/V live in the window pool, addressed by the window tables and slots.
  PagedRows(const LlamaConfig& c, const StepBatch& batch, const std::vector<int32_t>& seq_of, size_t block_size,
            RecurrentStatePool& states, size_t layer, bool window_pool)
      : c_(c), block_size_(block_size), batch_(batch), seq_of_(seq_of), states_(states), layer_(layer),
        window_pool_(window_pool) {}
  // Token t's pool slot, and where the pool keeps rows of head_dim values.
  size_t slot_of(size_t t) const {
    return static_cast<size_t>(window_pool_ ? batch_.window_slot_mapping[t] : batch_.slot_mapping[t]);
  }
  cpu::PagedKvLayout layout(size_t head_dim) const { return {block_size_, c_.kv_dim(), head_dim}; }
  struct Visible {
    std::span<const int32_t> block_table;
    size_t first, n_ctx;
  };
  Visible visible(size_t t, uint32_t window) const {
    const SeqChunk& seq = batch_.seqs[static_cast<size_t>(seq_of_[t])];
    const size_t pos = static_cast<size_t>(batch_.positions[t]);
    const size_t first = ref::window_start(pos, window);
    return {window_pool_ ? seq.window_block_table : seq.block_table, first, pos + 1 - first};
  }
  const LlamaConfig& c_;
  size_t block_size_;

 private:
  const StepBatch& batch_;
  const std::vector<int32_t>& seq_of_;
  RecurrentStatePool& states_;
  size_t layer_;
  bool window_pool_;
};

// F32 pools. Attention reads them in place: gathering copied every visible row (16 MB a global
// layer at 16k tokens of Gemma 3 1B) before reading it once.
class PagedKv final : public PagedRows {
 public:
  PagedKv(const LlamaConfig& c, const StepBatch& batch, const std::vector<int32_t>& seq_of, size_t block_size,
          RecurrentStatePool& states, size_t layer, bool window_pool, float* keys, float* values)
      : PagedRows(c, batch, seq_of, block_size, states, layer, window_pool), keys_(keys), values_(values) {}
  void store(size_t t, const float* k, const float* v, size_t n_kv_heads, size_t head_dim) override {
    const cpu::PagedKvLayout pool = layout(head_dim);
    for (size_t h = 0; h < n_kv_heads; ++h) {
      const size_t at = pool.row(slot_of(t), h);
      std::copy_n(k + h * head_dim, head_dim, keys_ + at);
      std::copy_n(v + h * head_dim, head_dim, values_ + at);
    }
  }
  void attend(size_t t, const float* q, const ref::AttentionParams& p, float* out) override {
    const Visible r = visible(t, p.window);
    ref::attention_paged(out, q, keys_, values_, r.block_table, block_size_, r.first, r.n_ctx, c_.kv_dim(), p);
  }

 private:
  float* keys_;
  float* values_;
};

// Quantized pools (cpu/kv_quant.h): rows quantized as they are stored.
class PagedKvQuant final : public PagedRows {
 public:
  PagedKvQuant(const LlamaConfig& c, const StepBatch& batch, const std::vector<int32_t>& seq_of, size_t block_size,
               RecurrentStatePool& states, size_t layer, bool window_pool, KvType type, uint8_t* keys,
               float* key_scales, uint8_t* values, float* value_scales)
      : PagedRows(c, batch, seq_of, block_size, states, layer, window_pool), type_(type), keys_(keys),
        key_scales_(key_scales), values_(values), value_scales_(value_scales) {}
  void store(size_t t, const float* k, const float* v, size_t n_kv_heads, size_t head_dim) override {
    const cpu::PagedKvLayout pool = layout(head_dim);
    for (size_t h = 0; h < n_kv_heads; ++h) {
      const size_t at = pool.row(slot_of(t), h), q_at = kv_plane_bytes(type_, at);
      cpu::quantize_kv(type_, k + h * head_dim, head_dim, keys_ + q_at, key_scales_ + at / cpu::kKvBlock);
      cpu::quantize_kv(type_, v + h * head_dim, head_dim, values_ + q_at, value_scales_ + at / cpu::kKvBlock);
    }
  }
  void attend(size_t t, const float* q, const ref::AttentionParams& p, float* out) override {
    const Visible r = visible(t, p.window);
    cpu::attention_paged_quant(out, q, cpu::QuantKvPools{type_, keys_, key_scales_, values_, value_scales_},
                               r.block_table, block_size_, r.first, r.n_ctx, c_.kv_dim(), p);
  }

 private:
  KvType type_;
  uint8_t* keys_;
  float* key_scales_;
  uint8_t* values_;
  float* value_scales_;
};

}  // namespace

void CpuRunner::copy_recurrent_state(int32_t from, int32_t to) {
  const int32_t n = states_.slots();
  if (from < 0 || from >= n || to < 0 || to >= n) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("recurrent state copy {} -> {} outside the {} slots", from, to, n));
  }
  if (from != to) states_.copy(from, to);
}

void CpuRunner::step(const StepBatch& batch, StepResult& out) {
  check_step_batch(batch, limits_, token_seq_, slot_scratch_);  // token_seq_: each token's sequence
  const bool decode = std::all_of(batch.seqs.begin(), batch.seqs.end(), [](const SeqChunk& s) {
    return s.n_tokens <= 1 + s.n_verify;
  });
  // A decode step goes first on cores shared with other models; a prefill step gives way to theirs.
  ComputeShare* share = options_.compute_share.get();
  const bool urgent = share != nullptr && decode;
  std::optional<ComputeShare::Urgent> mark;
  if (urgent) mark.emplace(*share);
  pool_.yield_to(share != nullptr && !urgent ? &share->urgent_steps() : nullptr);
  // A decode step runs on as many threads as have cores to themselves (decode_threads.h); a
  // prefill step on all.
  const bool adapt = decode && run_delay_ != nullptr;
  const int threads = adapt ? decode_threads_.threads() : pool_.size();
  pool_.set_participants(threads);
  if (!adapt) return step_layers(batch, out);
  const size_t workers = static_cast<size_t>(threads - 1);
  const double waited_before = run_delay_->seconds(workers);
  const auto start = std::chrono::steady_clock::now();
  step_layers(batch, out);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  decode_threads_.record(run_delay_->seconds(workers) - waited_before, wall);
}

void CpuRunner::step_layers(const StepBatch& batch, StepResult& out) {
  const LlamaConfig& c = config();
  const size_t n = batch.tokens.size();

  if (states_.slots() > 0) {  // a sequence starting at position 0 starts its recurrent state afresh
    for (const SeqChunk& seq : batch.seqs) {
      if (seq.n_past == 0) states_.reset(seq.state_slot);
    }
  }
  CpuActivations& acts = acts_;
  acts.resize(c, n);
  cpu_embed(c, weights_->weights(), *vectors_, batch.tokens.data(), acts, &pool_, kQuantizedMatmul);
  for (size_t l = 0; l < c.n_layers; ++l) {
    const size_t block_size = static_cast<size_t>(options_.block_size);
    const size_t kv_l = c.kv_layer(static_cast<uint32_t>(l));  // a KV-sharing layer reads another's pools
    const bool window_pool = window_blocks_ > 0 && in_window_pool(c, l);
    if (quantized_kv()) {
      PagedKvQuant kv(c, batch, token_seq_, block_size, states_, l, window_pool, options_.kv_type,
                      key_quants_[kv_l].data(), key_scales_[kv_l].data(), value_quants_[kv_l].data(),
                      value_scales_[kv_l].data());
      cpu_layer(c, weights_->weights(), *vectors_, l, batch.positions.data(), acts, kv, &pool_, kQuantizedMatmul);
    } else {
      PagedKv kv(c, batch, token_seq_, block_size, states_, l, window_pool, key_pool_[kv_l].data(),
                 value_pool_[kv_l].data());
      cpu_layer(c, weights_->weights(), *vectors_, l, batch.positions.data(), acts, kv, &pool_, kQuantizedMatmul);
    }
  }

  // Logits only for the last token of each sequence that wants output (and the n_verify tokens
  // before it), in one matmul.
  std::vector<size_t>& outputs = output_seqs_;  // per row: its sequence (logits != kNone)
  std::vector<size_t>& rows = output_rows_;     // the token of each row, seq order then token order
  outputs.clear();
  rows.clear();
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SeqChunk& seq = batch.seqs[s];
    if (seq.logits == LogitsMode::kNone || seq.logits == LogitsMode::kHidden) continue;
    for (int32_t i = seq.n_tokens - 1 - seq.n_verify; i < seq.n_tokens; ++i) {
      outputs.push_back(s);
      rows.push_back(static_cast<size_t>(seq.token_offset + i));
    }
  }
  const size_t vocab = c.vocab_size;
  std::vector<float>& logits = logits_;  // [n_outputs, vocab]
  logits.resize(outputs.size() * vocab);
  cpu_logits(c, weights_->weights(), *vectors_, acts, rows.data(), rows.size(), logits.data(), &pool_, kQuantizedMatmul);

  out.argmax.assign(batch.seqs.size(), -1);
  out.verify_argmax.clear();
  out.logits.clear();
  for (size_t o = 0; o < outputs.size(); ++o) {
    const float* row = &logits[o * vocab];
    const SeqChunk& seq = batch.seqs[outputs[o]];
    if (seq.logits == LogitsMode::kFull) out.logits.insert(out.logits.end(), row, row + vocab);
    if (rows[o] != static_cast<size_t>(seq.token_offset + seq.n_tokens - 1)) {
      out.verify_argmax.push_back(ref::argmax(row, vocab));
    } else {
      out.argmax[outputs[o]] = ref::argmax(row, vocab);
    }
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
