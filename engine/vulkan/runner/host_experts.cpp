#include "engine/vulkan/runner/host_experts.h"

#include <algorithm>


namespace vks::vk {
namespace {

void copy_rows(const float* from, size_t from_stride, float* to, size_t to_stride, size_t n, size_t width) {
  for (size_t t = 0; t < n; ++t) std::copy_n(from + t * from_stride, width, to + t * to_stride);
}

}  // namespace

HostExperts::HostExperts(const LlamaModel& model, uint32_t max_tokens) : model_(model), vectors_(model) {
  acts_.resize(model.config(), max_tokens);  // the largest step's buffers: later resizes stay in them
}

void HostExperts::run(uint32_t l, const float* xn, const float* x, uint32_t stride, uint32_t n, float* out) {
  const LlamaConfig& c = model_.config();
  const FfnSpec& ffn = c.layers[l].ffn;
  acts_.resize(c, n);
  copy_rows(xn, stride, acts_.xb.data(), c.dim, n, c.dim);
  if (ffn.router_input == RouterInput::kScaledNorm) copy_rows(x, stride, acts_.x.data(), c.dim, n, c.dim);
  expert_ffn(c, ffn, model_.weights().layers[l], vectors_.layers[l], acts_, &pool_,
             kQuantizedMatmul);  // the CPU backend's products (and one dispatch per matrix), so its bits
  copy_rows(acts_.proj.data(), c.dim, out, stride, n, c.dim);
}

}  // namespace vks::vk
