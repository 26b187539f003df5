#pragma once
// Shared helpers of the core kernel tests: one device per test binary (skipped with a clear
// message when no Vulkan device exists), buffers from host vectors, one-shot command recording,
// normalized error, and ggml-layout weights made from random floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "engine/gguf/ggml_type.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/kernel.h"
#include "engine/vulkan/kernels/ops.h"

namespace vks::vk::test {

struct Gpu {
  Device device;
  KernelRegistry kernels;
  Ops ops;
  explicit Gpu(Device d) : device(std::move(d)), kernels(device), ops(kernels) {}
};

class KernelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (list_devices().empty()) return;
    DeviceOptions options;
    options.disk_pipeline_cache = false;
    gpu_ = std::make_unique<Gpu>(Device::create(options));
  }
  static void TearDownTestSuite() { gpu_.reset(); }
  void SetUp() override {
    if (!gpu_) GTEST_SKIP() << "no Vulkan device found (install mesa-vulkan-drivers for lavapipe); skipping";
  }

  const Device& device() const { return gpu_->device; }
  KernelRegistry& kernels() const { return gpu_->kernels; }
  const Ops& ops() const { return gpu_->ops; }

  template <class T>
  Buffer upload(const std::vector<T>& v) const {
    Buffer b = device().create_buffer(std::max<size_t>(16, v.size() * sizeof(T)));
    device().upload(b, 0, v.data(), v.size() * sizeof(T));
    return b;
  }
  template <class T>
  std::vector<T> download(const Buffer& b, size_t n) const {
    std::vector<T> v(n);
    device().download(b, 0, v.data(), n * sizeof(T));
    return v;
  }
  void run(const std::function<void(CommandBuffer&)>& record) const {
    CommandBuffer cmd = device().create_command_buffer();
    cmd.begin();
    record(cmd);
    cmd.barrier(Stage::kCompute, Stage::kHost);
    cmd.end();
    device().submit_and_wait(cmd);
  }

  static inline std::unique_ptr<Gpu> gpu_;
};

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// ||a - b|| / ||b|| (0 when both are zero).
inline double normalized_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  if (a.size() != b.size()) return 1e30;
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

// rows x cols random floats encoded in ggml layout of `type`.
inline std::vector<uint8_t> ggml_matrix(GgmlType type, uint64_t rows, uint64_t cols, uint32_t seed) {
  const std::vector<float> f = random_floats(rows * cols, seed);
  const size_t row_bytes = ggml_row_size(type, cols);
  std::vector<uint8_t> out(rows * row_bytes);
  for (uint64_t r = 0; r < rows; ++r) {
    if (type == GgmlType::kF32) {
      std::memcpy(out.data() + r * row_bytes, f.data() + r * cols, cols * 4);
    } else if (type == GgmlType::kF16) {
      for (uint64_t c = 0; c < cols; ++c) {
        const uint16_t h = fp32_to_fp16(f[r * cols + c]);
        std::memcpy(out.data() + r * row_bytes + 2 * c, &h, 2);
      }
    } else if (type == GgmlType::kBF16) {
      for (uint64_t c = 0; c < cols; ++c) {
        const uint16_t h = fp32_to_bf16(f[r * cols + c]);
        std::memcpy(out.data() + r * row_bytes + 2 * c, &h, 2);
      }
    } else {
      quantize_row(type, f.data() + r * cols, out.data() + r * row_bytes, cols);
    }
  }
  return out;
}

inline std::vector<float> dequantize_matrix(GgmlType type, const std::vector<uint8_t>& data, uint64_t rows,
                                            uint64_t cols) {
  std::vector<float> out(rows * cols);
  const size_t row_bytes = ggml_row_size(type, cols);
  for (uint64_t r = 0; r < rows; ++r) dequantize_row(type, data.data() + r * row_bytes, out.data() + r * cols, cols);
  return out;
}

}  // namespace vks::vk::test
