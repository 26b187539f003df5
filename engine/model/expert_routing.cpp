#include "engine/model/expert_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace vks {
namespace {

// softmax of n values in place (max subtracted, the sum accumulated in double like ggml's).
void softmax(float* v, size_t n) {
  const float max = *std::max_element(v, v + n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    v[i] = std::exp(v[i] - max);
    sum += v[i];
  }
  const float scale = static_cast<float>(1.0 / sum);
  for (size_t i = 0; i < n; ++i) v[i] *= scale;
}

}  // namespace

void route_experts(const float* logits, const FfnSpec& spec, int32_t* ids, float* weights, const float* expert_scale) {
  const size_t n = spec.n_experts, k = spec.n_used;
  std::vector<float> score(logits, logits + n);
  if (spec.routing.order == ExpertRouting::Order::kSoftmaxThenTopK) softmax(score.data(), n);
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](int32_t a, int32_t b) { return score[a] > score[b] || (score[a] == score[b] && a < b); });
  for (size_t i = 0; i < k; ++i) {
    ids[i] = order[i];
    weights[i] = score[static_cast<size_t>(order[i])];
  }
  if (spec.routing.order == ExpertRouting::Order::kTopKThenSoftmax) softmax(weights, k);
  if (spec.routing.normalize) {
    float sum = 0.0f;
    for (size_t i = 0; i < k; ++i) sum += weights[i];
    for (size_t i = 0; i < k; ++i) weights[i] /= sum;
  }
  if (expert_scale != nullptr) {
    for (size_t i = 0; i < k; ++i) weights[i] *= expert_scale[static_cast<size_t>(ids[i])];
  }
}

void group_by_expert(const int32_t* ids, size_t n, uint32_t n_experts, ExpertGroups& groups) {
  groups.starts.assign(size_t{n_experts} + 1, 0);
  for (size_t i = 0; i < n; ++i) ++groups.starts[static_cast<size_t>(ids[i]) + 1];
  for (uint32_t e = 0; e < n_experts; ++e) groups.starts[e + 1] += groups.starts[e];
  groups.choices.resize(n);
  std::vector<uint32_t> next(groups.starts.begin(), groups.starts.end() - 1);
  for (size_t i = 0; i < n; ++i) groups.choices[next[static_cast<size_t>(ids[i])]++] = static_cast<uint32_t>(i);
}

}  // namespace vks
