#include "engine/model/pooling.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/common/error.h"

namespace vks {

Pooling pooling_from_gguf(int32_t pooling_type) {
  switch (pooling_type) {
    case 2: return Pooling::kCls;
    case 3: return Pooling::kLast;
    default: return Pooling::kMean;  // 1 mean; 0 none / absent: generative models get mean
  }
}

std::optional<Pooling> pooling_from_name(std::string_view name) {
  if (name == "mean") return Pooling::kMean;
  if (name == "cls") return Pooling::kCls;
  if (name == "last") return Pooling::kLast;
  return std::nullopt;
}

std::string_view pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
  }
  return "unknown";
}

void l2_normalize(std::vector<float>& v) {
  double sum = 0;
  for (const float x : v) sum += static_cast<double>(x) * x;
  const double norm = std::sqrt(sum);
  const float scale = norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
  for (float& x : v) x *= scale;
}

EmbeddingPooler::EmbeddingPooler(Pooling pooling, size_t dim, int32_t n_tokens)
    : pooling_(pooling), dim_(dim), n_tokens_(n_tokens), acc_(dim, 0.0) {
  if (n_tokens <= 0 || dim == 0) throw Error(ErrorCode::kInvalidArgument, "embedding pooler needs tokens and a dimension");
}

void EmbeddingPooler::add(int32_t first_pos, const float* rows, int32_t n) {
  if (first_pos < 0 || n < 0 || first_pos > next_pos_ || first_pos + n > n_tokens_) {
    throw Error(ErrorCode::kInternal, "embedding pooler got positions " + std::to_string(first_pos) + "+" +
                                          std::to_string(n) + " after " + std::to_string(next_pos_) + " of " +
                                          std::to_string(n_tokens_));
  }
  for (int32_t pos = next_pos_; pos < first_pos + n; ++pos) {
    const float* row = rows + static_cast<size_t>(pos - first_pos) * dim_;
    const bool take = pooling_ == Pooling::kMean || (pooling_ == Pooling::kCls && pos == 0) ||
                      (pooling_ == Pooling::kLast && pos == n_tokens_ - 1);
    if (!take) continue;
    for (size_t i = 0; i < dim_; ++i) {
      acc_[i] = pooling_ == Pooling::kMean ? acc_[i] + row[i] : static_cast<double>(row[i]);
    }
  }
  next_pos_ = std::max(next_pos_, first_pos + n);
}

std::vector<float> EmbeddingPooler::result(bool normalize) const {
  if (!complete()) throw Error(ErrorCode::kInternal, "embedding pooled before every token was seen");
  std::vector<float> out(dim_);
  const double scale = pooling_ == Pooling::kMean ? 1.0 / n_tokens_ : 1.0;
  for (size_t i = 0; i < dim_; ++i) out[i] = static_cast<float>(acc_[i] * scale);
  if (normalize) l2_normalize(out);
  return out;
}

}  // namespace vks
