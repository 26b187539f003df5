#include "engine/vulkan/runner/invariance_check.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <vector>

#include "engine/common/error.h"
#include "engine/vulkan/kernels/device_matrix.h"

namespace vks::vk {
namespace {

constexpr uint64_t kRows = 16;
constexpr uint64_t kCols = 256;  // one super-block: every format's block divides it

// Deterministic values in about [-1, 1) (a 32-bit LCG): the check must not depend on <random>'s
// distributions, which differ between standard libraries.
std::vector<float> pseudo_random(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (float& f : v) {
    s = s * 1664525u + 1013904223u;
    f = static_cast<float>(static_cast<int32_t>(s >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
  }
  return v;
}

// y [n][kRows] = W x for x [n][kCols] through the family's plain product.
std::vector<float> product(const Device& device, const Ops& ops, const DeviceMatrix& w, const float* x, uint32_t n) {
  Buffer xb = device.create_buffer(uint64_t{n} * kCols * 4);
  device.upload(xb, 0, x, uint64_t{n} * kCols * 4);
  Buffer yb = device.create_buffer(uint64_t{n} * kRows * 4);
  CommandBuffer cmd = device.create_command_buffer();
  cmd.begin();
  ops.matmul(cmd, w, xb.view(), kCols, yb.view(), kRows, n);
  cmd.barrier(Stage::kCompute, Stage::kHost);
  cmd.end();
  device.submit_and_wait(cmd);
  std::vector<float> y(uint64_t{n} * kRows);
  device.download(yb, 0, y.data(), y.size() * 4);
  return y;
}

}  // namespace

std::string batch_invariance_mismatch(const Device& device, KernelRegistry& kernels, MatmulFamily family,
                                      uint32_t lanes_wide_tile, GgmlType type, uint32_t batch) {
  const std::vector<float> weights = pseudo_random(kRows * kCols, 7);
  std::vector<uint8_t> blocks(kRows * ggml_row_size(type, kCols));
  for (uint64_t r = 0; r < kRows; ++r) {
    quantize_row(type, &weights[r * kCols], &blocks[r * ggml_row_size(type, kCols)], kCols);
  }
  const DeviceMatrix w = upload_matrix(device, type, kRows, kCols, blocks.data());
  Ops ops(kernels, family, lanes_wide_tile);
  Buffer scratch;
  if (family == MatmulFamily::kDot) {
    scratch = device.create_buffer(Ops::q8_scratch_bytes(batch, kCols));
    ops.bind_q8_scratch(scratch.view());
  }
  const std::vector<float> x = pseudo_random(uint64_t{batch} * kCols, 11);
  const std::vector<float> together = product(device, ops, w, x.data(), batch);
  for (uint32_t t : {0u, batch / 2, batch - 1}) {
    const std::vector<float> alone = product(device, ops, w, &x[uint64_t{t} * kCols], 1);
    if (std::memcmp(alone.data(), &together[uint64_t{t} * kRows], kRows * 4) != 0) {
      return std::string(ggml_type_name(type)) + ": token " + std::to_string(t) + " of " + std::to_string(batch) +
             " differs from itself alone";
    }
  }
  return "";
}

MatmulFamily settle_matmul_family(const Device& device, KernelRegistry& kernels, MatmulFamily chosen, bool forced,
                                  uint32_t lanes_wide_tile, const std::set<GgmlType>& types, uint32_t batch) {
  auto mismatch = [&](MatmulFamily family) {
    for (GgmlType type : types) {
      std::string what = batch_invariance_mismatch(device, kernels, family, lanes_wide_tile, type, batch);
      if (!what.empty()) return what;
    }
    return std::string();
  };
  const std::string first = mismatch(chosen);
  if (first.empty()) return chosen;
  if (forced) {
    spdlog::warn("vulkan: the {} matrix kernels are not batch invariant on {} ({}): a sequence's output may "
                 "depend on what else runs in its steps; kept because it was asked for",
                 matmul_family_name(chosen), device.info().name, first);
    return chosen;
  }
  std::vector<MatmulFamily> fallbacks;
  if (device.info().integer_dot) fallbacks.push_back(MatmulFamily::kDot);
  fallbacks.push_back(MatmulFamily::kLanes);
  fallbacks.push_back(MatmulFamily::kRows);
  for (MatmulFamily family : fallbacks) {
    if (family == chosen) continue;
    const std::string what = mismatch(family);
    if (what.empty()) {
      spdlog::warn("vulkan: the {} matrix kernels are not batch invariant on {} ({}); using the {} kernels",
                   matmul_family_name(chosen), device.info().name, first, matmul_family_name(family));
      return family;
    }
    spdlog::warn("vulkan: the {} matrix kernels are not batch invariant on {} either ({})", matmul_family_name(family),
                 device.info().name, what);
  }
  spdlog::error("vulkan: no matrix kernel family is batch invariant on {} ({}): outputs may depend on batching",
                device.info().name, first);
  return chosen;
}

}  // namespace vks::vk
