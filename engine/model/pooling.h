#pragma once
// Embedding pooling with llama.cpp's semantics: each token's hidden state after the final RMSNorm
// (before the output projection) is pooled into one vector per input, as the GGUF's
// `<arch>.pooling_type` says (1 mean, 2 cls = first token, 3 last = last token; 0 none, absent or
// anything else -> mean, the useful choice for generative llama models), then L2-normalized unless
// the caller asks for the raw vector (llama.cpp's common_embd_normalize with norm 2).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace vks {

enum class Pooling { kMean, kCls, kLast };

Pooling pooling_from_gguf(int32_t pooling_type);
std::optional<Pooling> pooling_from_name(std::string_view name);  // "mean", "cls", "last"
std::string_view pooling_name(Pooling p);

// Scales v to unit Euclidean length (sum of squares in double); an all-zero vector stays zero.
void l2_normalize(std::vector<float>& v);

// Pools one input's hidden states as they arrive chunk by chunk, in position order. The mean is
// summed in double over positions 0..n-1 in order, so the result does not depend on how the
// input was chunked or batched.
class EmbeddingPooler {
 public:
  EmbeddingPooler(Pooling pooling, size_t dim, int32_t n_tokens);

  // The rows [n, dim] of positions first_pos .. first_pos+n-1. Positions seen before (a chunk
  // recomputed after a preemption) are skipped; a gap is a caller bug (kInternal).
  void add(int32_t first_pos, const float* rows, int32_t n);
  bool complete() const { return next_pos_ == n_tokens_; }
  // The pooled vector [dim]; call once complete().
  std::vector<float> result(bool normalize) const;

 private:
  Pooling pooling_;
  size_t dim_;
  int32_t n_tokens_;
  int32_t next_pos_ = 0;
  std::vector<double> acc_;  // mean: running sum; cls/last: the chosen row
};

}  // namespace vks
