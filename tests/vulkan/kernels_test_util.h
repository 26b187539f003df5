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
#include "tests/common/vulkan_skip.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/kernel.h"
#include "engine/vulkan/kernels/ops.h"

namespace vks::vk::test {

struct Gpu {
  Device device;
  KernelRegistry kernels;
  Ops ops;        // the rows family (CPU devices' matrix kernels)
  Ops lanes_ops;  // the lanes family (GPUs'): both are tested on every device
  Ops lanes_16;   // the lanes family with wide token tiles (GPUs' prefill), 16 and 32 tokens
  Ops lanes_32;
  Ops dot_ops;    // the int8 dot-product family (devices with integer dot products), tiles 8 and 16
  Ops dot_16;
  Buffer q8_scratch;  // the dot family's Q8 rows: 41 tokens of 4,608 columns and more
  explicit Gpu(Device d)
      : device(std::move(d)),
        kernels(device),
        ops(kernels),
        lanes_ops(kernels, MatmulFamily::kLanes),
        lanes_16(kernels, MatmulFamily::kLanes, 16),
        lanes_32(kernels, MatmulFamily::kLanes, 32),
        dot_ops(kernels, MatmulFamily::kDot),
        dot_16(kernels, MatmulFamily::kDot, 16),
        q8_scratch(device.create_buffer(Ops::q8_scratch_bytes(64, 8192))) {
    dot_ops.bind_q8_scratch(q8_scratch.view());
    dot_16.bind_q8_scratch(q8_scratch.view());
  }
};

// A buffer holding v (at least 16 bytes), n values read back, and one recording run to completion.
template <class T>
Buffer upload_to(const Device& device, const std::vector<T>& v) {
  Buffer b = device.create_buffer(std::max<size_t>(16, v.size() * sizeof(T)));
  device.upload(b, 0, v.data(), v.size() * sizeof(T));
  return b;
}
template <class T>
std::vector<T> download_from(const Device& device, const Buffer& b, size_t n) {
  std::vector<T> v(n);
  device.download(b, 0, v.data(), n * sizeof(T));
  return v;
}
inline void run_on(const Device& device, const std::function<void(CommandBuffer&)>& record) {
  CommandBuffer cmd = device.create_command_buffer();
  cmd.begin();
  record(cmd);
  cmd.barrier(Stage::kCompute, Stage::kHost);
  cmd.end();
  device.submit_and_wait(cmd);
}

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
    if (!gpu_) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device found (install mesa-vulkan-drivers for lavapipe); skipping");
  }

  const Device& device() const { return gpu_->device; }
  KernelRegistry& kernels() const { return gpu_->kernels; }
  const Ops& ops() const { return gpu_->ops; }
  // lanes_tile: the lanes family's wide token tile (8, 16 or 32).
  const Ops& ops(MatmulFamily family, uint32_t lanes_tile = 8) const {
    if (family == MatmulFamily::kDot) return lanes_tile == 16 ? gpu_->dot_16 : gpu_->dot_ops;
    if (family != MatmulFamily::kLanes) return gpu_->ops;
    return lanes_tile == 32 ? gpu_->lanes_32 : lanes_tile == 16 ? gpu_->lanes_16 : gpu_->lanes_ops;
  }
  // The dot family runs where the device has integer dot products (lavapipe has them): its tests
  // skip elsewhere.
  bool can_run(MatmulFamily family) const { return family != MatmulFamily::kDot || device().info().integer_dot; }

  template <class T>
  Buffer upload(const std::vector<T>& v) const {
    return upload_to(device(), v);
  }
  template <class T>
  std::vector<T> download(const Buffer& b, size_t n) const {
    return download_from<T>(device(), b, n);
  }
  void run(const std::function<void(CommandBuffer&)>& record) const { run_on(device(), record); }

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

// x as the dot family's kernels see it: each block of 32 as ggml's q8 (d = max|v| / 127, values
// round(v * (1 / d)), ties to even as quantize_q8_f32.comp) and back to floats, d * q.
inline std::vector<float> q8_round_trip(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b + 32 <= x.size(); b += 32) {
    float amax = 0.0f;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b + i]));
    const float d = amax / 127.0f;
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    for (size_t i = 0; i < 32; ++i) out[b + i] = d * std::nearbyint(x[b + i] * inv);
  }
  return out;
}

// Hand-made blocks of the types tested without a quantizer (Q4_1, Q5_0, Q5_1 and the K-quants) and
// of IQ4_NL / IQ4_XS (whose quantizers never write some scale patterns): random bytes with every f16
// scale field (byte offsets below) set to a random half in +-[0.002, 0.05] (dmin positive), so every
// bit pattern of quants and packed scales occurs.
struct HalfFields {
  GgmlType type;
  uint32_t block_bytes;
  int d, dmin;  // byte offsets of the f16 fields in a block (-1: none)
};
inline const HalfFields* hand_made_fields(GgmlType type) {
  static const HalfFields kFields[] = {
      {GgmlType::kQ4_1, 20, 0, 2},   {GgmlType::kQ5_0, 22, 0, -1},  {GgmlType::kQ5_1, 24, 0, 2},
      {GgmlType::kQ2_K, 84, 80, 82}, {GgmlType::kQ3_K, 110, 108, -1}, {GgmlType::kQ4_K, 144, 0, 2},
      {GgmlType::kQ5_K, 176, 0, 2},  {GgmlType::kQ6_K, 210, 208, -1}, {GgmlType::kIQ4_NL, 18, 0, -1},
      {GgmlType::kIQ4_XS, 136, 0, -1},
  };
  for (const HalfFields& f : kFields) {
    if (f.type == type) return &f;
  }
  return nullptr;
}
inline std::vector<uint8_t> hand_made_blocks(const HalfFields& f, uint64_t n_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n_blocks * f.block_bytes);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng() & 0xff);
  std::uniform_real_distribution<float> mag(0.002f, 0.05f);
  for (uint64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = out.data() + b * f.block_bytes;
    const uint16_t d = fp32_to_fp16((rng() & 1) ? mag(rng) : -mag(rng));
    std::memcpy(blk + f.d, &d, 2);
    if (f.dmin >= 0) {
      const uint16_t m = fp32_to_fp16(mag(rng));
      std::memcpy(blk + f.dmin, &m, 2);
    }
  }
  return out;
}

// Hand-made MXFP4 blocks: random codes (all 16, -0 included, which the quantizer never writes)
// under random exponent bytes 120..131 (weights up to 12 * 2^3).
inline std::vector<uint8_t> hand_made_mxfp4_blocks(uint64_t n_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n_blocks * 17);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng() & 0xff);
  for (uint64_t b = 0; b < n_blocks; ++b) out[b * 17] = static_cast<uint8_t>(120 + rng() % 12);
  return out;
}

// rows x cols random floats encoded in ggml layout of `type` (hand-made blocks for the types above).
inline std::vector<uint8_t> ggml_matrix(GgmlType type, uint64_t rows, uint64_t cols, uint32_t seed) {
  if (const HalfFields* f = hand_made_fields(type)) {
    return hand_made_blocks(*f, rows * ggml_row_size(type, cols) / f->block_bytes, seed);
  }
  if (type == GgmlType::kMXFP4) return hand_made_mxfp4_blocks(rows * cols / 32, seed);
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
