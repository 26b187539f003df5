#include "engine/cpu/cpu_model.h"

#include <algorithm>
#include <string>

#include "engine/common/error.h"
#include "engine/cpu/reference_ops.h"

namespace vks {

std::vector<float> dequantize_vector(const TensorRef& t) {
  std::vector<float> out(t.rows * t.cols);
  for (uint64_t r = 0; r < t.rows; ++r) dequantize_tensor_row(t, r, out.data() + r * t.cols);
  return out;
}

namespace {

// The contiguous cache of one layer: position p's rows at p * kv_dim; and its one recurrent state.
class ContiguousKv final : public LayerKv {
 public:
  ContiguousKv(const LlamaConfig& c, float* keys, float* values, int32_t pos, RecurrentState state)
      : c_(c), keys_(keys), values_(values), pos_(static_cast<size_t>(pos)), state_(state) {}
  void store(size_t t, const float* k, const float* v, size_t n_kv_heads, size_t head_dim) override {
    std::copy_n(k, n_kv_heads * head_dim, keys_ + (pos_ + t) * c_.kv_dim());
    std::copy_n(v, n_kv_heads * head_dim, values_ + (pos_ + t) * c_.kv_dim());
  }
  void attend(size_t t, const float* q, const ref::AttentionParams& p, float* out) override {
    const size_t first = ref::window_start(pos_ + t, p.window);
    ref::AttentionParams rows = p;
    rows.kv_stride = c_.kv_dim();
    ref::attention(out, q, keys_ + first * c_.kv_dim(), values_ + first * c_.kv_dim(), pos_ + t + 1 - first, rows);
  }
  RecurrentState recurrent_state(size_t) override { return state_; }

 private:
  const LlamaConfig& c_;
  float* keys_;
  float* values_;
  size_t pos_;  // position of token 0
  RecurrentState state_;
};

}  // namespace

CpuModel::CpuModel(const LlamaModel& model, int threads, int32_t max_seq_len)
    : model_(model), config_(model.config()), pool_(threads), vectors_(std::make_unique<CpuModelVectors>(model)),
      states_(model.config(), 1) {
  const LlamaConfig& c = config_;
  max_seq_len_ = max_seq_len > 0 ? max_seq_len : static_cast<int32_t>(std::min<uint32_t>(c.context_length, 4096));
  if (max_seq_len_ <= 0) max_seq_len_ = 4096;
  for (size_t l = 0; l < c.n_layers; ++l) {
    const bool attention = c.layers[l].mixer == Mixer::kAttention && !c.layers[l].attention.shares_kv();
    key_cache_.emplace_back(attention ? static_cast<size_t>(max_seq_len_) * c.kv_dim() : 0);
    value_cache_.emplace_back(attention ? static_cast<size_t>(max_seq_len_) * c.kv_dim() : 0);
  }
  acts_.resize(c, 1);
  logits_.resize(c.vocab_size);
}

const std::vector<float>& CpuModel::forward(int32_t token, int32_t pos) {
  const LlamaConfig& c = config_;
  if (token < 0 || static_cast<uint32_t>(token) >= c.vocab_size) {
    throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(token) + " is outside the vocabulary (" +
                                                 std::to_string(c.vocab_size) + " tokens)");
  }
  if (pos < 0 || pos >= max_seq_len_ || pos > n_cached_) {
    throw Error(ErrorCode::kInvalidArgument, "position " + std::to_string(pos) + " is not valid: " +
                                                 std::to_string(n_cached_) + " positions cached, capacity " +
                                                 std::to_string(max_seq_len_));
  }
  // A recurrent state holds every position run so far: it can restart, not go back.
  if (states_.slot_bytes() > 0) {
    if (pos != 0 && pos != n_cached_) {
      throw Error(ErrorCode::kInvalidArgument, "position " + std::to_string(pos) + " would rewind a recurrent state (" +
                                                   std::to_string(n_cached_) + " positions run): restart at 0");
    }
    if (pos == 0) states_.reset(0);
  }
  cpu_embed(c, model_.weights(), *vectors_, &token, acts_, &pool_, &ref::matmul);
  for (size_t l = 0; l < c.n_layers; ++l) {
    const size_t kv_l = c.kv_layer(static_cast<uint32_t>(l));  // a KV-sharing layer reads another's cache
    ContiguousKv kv(c, key_cache_[kv_l].data(), value_cache_[kv_l].data(), pos, states_.at(l, 0));
    cpu_layer(c, model_.weights(), *vectors_, l, &pos, acts_, kv, &pool_, &ref::matmul);
  }
  const size_t row = 0;
  cpu_logits(c, model_.weights(), *vectors_, acts_, &row, 1, logits_.data(), &pool_, &ref::matmul);
  n_cached_ = pos + 1;
  return logits_;
}

std::vector<float> CpuModel::final_hidden() const {
  std::vector<float> out(config_.dim);
  ref::rmsnorm(out.data(), acts_.x.data(), vectors_->output_norm.data(), config_.dim, config_.norm_eps);
  return out;
}

}  // namespace vks
