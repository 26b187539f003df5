// The reference ops on hand-computed values, and quantized matrix products against F32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/cpu/exp_lanes.h"
#include "engine/cpu/reference_ops.h"
#include "engine/cpu/tanh_lanes.h"
#include "engine/gguf/ggml_type.h"

namespace vks {
namespace {

TensorRef make_tensor(GgmlType type, uint64_t rows, uint64_t cols, std::vector<uint8_t>& storage) {
  TensorRef t;
  t.name = "test";
  t.type = type;
  t.rows = rows;
  t.cols = cols;
  t.data = storage.data();
  t.nbytes = storage.size();
  return t;
}

TEST(ReferenceOps, RmsNormByHand) {
  const float x[4] = {1, 2, 3, 4};
  const float w[4] = {1, 0.5f, 2, -1};
  float out[4];
  ref::rmsnorm(out, x, w, 4, 0.0f);
  const float scale = 1.0f / std::sqrt((1 + 4 + 9 + 16) / 4.0f);
  EXPECT_FLOAT_EQ(out[0], 1 * scale);
  EXPECT_FLOAT_EQ(out[1], 0.5f * 2 * scale);
  EXPECT_FLOAT_EQ(out[2], 2 * 3 * scale);
  EXPECT_FLOAT_EQ(out[3], -4 * scale);
}

// n gate values, then n up values, from N(0, 6^2) seeded by `seed`.
void random_gate_up(uint32_t seed, size_t n, std::vector<float>& gate, std::vector<float>& up) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 6.0f);
  gate.resize(n);
  up.resize(n);
  for (float& x : gate) x = dist(rng);
  for (float& x : up) x = dist(rng);
}

// SwiGLU runs eight lanes at a time and the rest one by one: every element has the scalar
// expression's bits, and the value is close to the double one.
TEST(ReferenceOps, SwigluIsTheScalarExpressionInEveryElement) {
  const size_t n = 8 * 37 + 5;
  std::vector<float> gate, up, out(n);
  random_gate_up(8, n, gate, up);
  gate[3] = -200.0f;  // exp(200) is +inf: silu is -0
  gate[n - 1] = 200.0f;
  ref::swiglu(out.data(), gate.data(), up.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float want = g * (1.0f / (1.0f + ref::exp_lanes(-g))) * up[i];
    EXPECT_EQ(std::memcmp(&out[i], &want, sizeof want), 0) << i;
    const double silu = static_cast<double>(g) / (1.0 + std::exp(-static_cast<double>(g)));
    EXPECT_NEAR(out[i], silu * up[i], 1e-5 * (1 + std::fabs(silu * up[i]))) << i;
  }
  // silu alone, in place: g * sigmoid(g) in every element.
  std::vector<float> x = gate;
  ref::silu(x.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const float want = gate[i] * (1.0f / (1.0f + ref::exp_lanes(-gate[i])));
    EXPECT_EQ(std::memcmp(&x[i], &want, sizeof want), 0) << "silu " << i;
  }
}

TEST(ReferenceOps, RopeRotatesAdjacentPairs) {
  // Two heads of 6 values, rope_dim 4: pairs (0,1) and (2,3) rotate, (4,5) stay.
  std::vector<float> v = {1, 0, 0, 1, 7, 8, 1, 0, 0, 1, 7, 8};
  ref::rope_norm(v.data(), 2, 6, 4, 3, 10000.0f, 1.0f);
  const float t0 = 3.0f;                                  // pair 0: pos * base^0
  const float t1 = 3.0f * std::pow(10000.0f, -2.0f / 4);  // pair 1: pos * base^(-2/4)
  for (int h = 0; h < 2; ++h) {
    const float* p = v.data() + h * 6;
    EXPECT_NEAR(p[0], std::cos(t0), 1e-6);
    EXPECT_NEAR(p[1], std::sin(t0), 1e-6);
    EXPECT_NEAR(p[2], -std::sin(t1), 1e-6);
    EXPECT_NEAR(p[3], std::cos(t1), 1e-6);
    EXPECT_EQ(p[4], 7);
    EXPECT_EQ(p[5], 8);
  }
  std::vector<float> at_zero = {0.3f, -0.7f, 1.5f, 2.5f};
  const std::vector<float> before = at_zero;
  ref::rope_norm(at_zero.data(), 1, 4, 4, 0, 10000.0f, 1.0f);
  EXPECT_EQ(at_zero, before);
}

TEST(ReferenceOps, RopeNeoxRotatesHalvesWithFactors) {
  // One head of 10 values, rope_dim 8, NEOX: pairs (i, i+4) for i < 4 rotate, values 8, 9 stay.
  // Frequency factors divide pair i's frequency.
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const std::vector<float> before = v;
  const float factors[4] = {1.0f, 2.0f, 4.0f, 8.0f};
  ref::RopeParams p;
  p.rope_dim = 8;
  p.freq_base = 100.0f;
  p.freq_scale = 0.5f;
  p.mode = RopeMode::kNeox;
  p.freq_factors = factors;
  ref::rope(v.data(), 1, 10, 5, p);
  for (int i = 0; i < 4; ++i) {
    const double theta = 5.0 * std::pow(100.0, -2.0 * i / 8) / factors[i] * 0.5;
    const double a = before[i], b = before[i + 4];
    EXPECT_NEAR(v[i], a * std::cos(theta) - b * std::sin(theta), 1e-5) << i;
    EXPECT_NEAR(v[i + 4], a * std::sin(theta) + b * std::cos(theta), 1e-5) << i;
  }
  EXPECT_EQ(v[8], 9);
  EXPECT_EQ(v[9], 10);
}

TEST(ReferenceOps, RmsNormHeadsAndBias) {
  // Two heads of 2 values share the weight (2, 0.5): each head is normalized by its own RMS.
  std::vector<float> v = {3, 4, 1, -1};
  const float w[2] = {2.0f, 0.5f};
  ref::rmsnorm_heads(v.data(), w, 2, 2, 0.0f);
  const double rms0 = std::sqrt((9.0 + 16.0) / 2), rms1 = 1.0;
  EXPECT_NEAR(v[0], 3 / rms0 * 2, 1e-6);
  EXPECT_NEAR(v[1], 4 / rms0 * 0.5, 1e-6);
  EXPECT_NEAR(v[2], 1 / rms1 * 2, 1e-6);
  EXPECT_NEAR(v[3], -1 / rms1 * 0.5, 1e-6);
  const float bias[4] = {1, -2, 0.5f, 0};
  ref::add_bias(v.data(), bias, 4);
  EXPECT_NEAR(v[1], 4 / rms0 * 0.5 - 2, 1e-6);
  EXPECT_NEAR(v[2], 2.5, 1e-6);
}

TEST(ReferenceOps, AttentionByHand) {
  // 2 query heads sharing 1 KV head of dim 2, 2 positions.
  const float q[4] = {1, 0, 0, 0};
  const float k[4] = {1, 0, 0, 1};
  const float v[4] = {10, 20, 30, 40};
  float out[4];
  ref::attention(out, q, k, v, 2, 2, 1, 2);
  // Head 0: scores 1/sqrt2 and 0.
  const float a = std::exp(1.0f / std::sqrt(2.0f));
  const float p0 = a / (a + 1), p1 = 1 / (a + 1);
  EXPECT_NEAR(out[0], p0 * 10 + p1 * 30, 1e-5);
  EXPECT_NEAR(out[1], p0 * 20 + p1 * 40, 1e-5);
  // Head 1: q = 0, uniform.
  EXPECT_NEAR(out[2], 20, 1e-5);
  EXPECT_NEAR(out[3], 30, 1e-5);
}

// GeGLU and gpt-oss's clamped SwiGLU run in lanes the same way: every element has the scalar
// expression's bits (written out here), and the value is close to the double formula's: GELU's
// 0.5 g (1 + tanh(z)); gpt-oss's clamps, NaN passing through them.
TEST(ReferenceOps, GatedActivationsAreTheScalarExpressionInEveryElement) {
  const size_t n = 16 * 23 + 7;
  std::vector<float> gate, up, out(n);
  random_gate_up(9, n, gate, up);
  gate[5] = -200.0f;
  gate[n - 2] = 200.0f;
  up[9] = std::nanf("");
  gate[10] = std::nanf("");
  const auto sigmoid = [](float x) { return 1.0f / (1.0f + ref::exp_lanes(-x)); };
  ref::gelu_glu(out.data(), gate.data(), up.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float want = g * sigmoid(1.59576912160573071176f * g * (1.0f + 0.044715f * g * g)) * up[i];
    EXPECT_EQ(std::memcmp(&out[i], &want, sizeof want), 0) << "gelu " << i;
    const double gd = g, z = 0.79788456080286535588 * gd * (1 + 0.044715 * gd * gd);
    const double exact = 0.5 * gd * (1 + std::tanh(z)) * up[i];
    if (std::isnan(exact)) {
      EXPECT_TRUE(std::isnan(out[i])) << "gelu " << i;
    } else {
      EXPECT_NEAR(out[i], exact, 1e-5 * (1 + std::fabs(exact))) << "gelu " << i;
    }
  }
  ref::swiglu_oai(out.data(), gate.data(), up.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], 7.0f), u = std::clamp(up[i], -7.0f, 7.0f);
    const float want = g * sigmoid(1.702f * g) * (u + 1.0f);
    EXPECT_EQ(std::memcmp(&out[i], &want, sizeof want), 0) << "oai " << i;
    const double exact = g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
    if (std::isnan(exact)) {
      EXPECT_TRUE(std::isnan(out[i])) << "oai " << i;
    } else {
      EXPECT_NEAR(out[i], exact, 1e-5 * (1 + std::fabs(exact))) << "oai " << i;
    }
  }
}

// Soft-capping in lanes: every element is cap * tanh_lanes(x / cap), close to the double tanh.
TEST(ReferenceOps, SoftcapIsTheScalarExpressionInEveryElement) {
  std::mt19937 rng(10);
  std::normal_distribution<float> dist(0.0f, 40.0f);
  const size_t n = 16 * 19 + 3;
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  x[4] = 1e-30f;
  x[7] = -0.0f;
  x[n - 1] = 1e30f;
  std::vector<float> out = x;
  ref::softcap(out.data(), n, 30.0f);
  for (size_t i = 0; i < n; ++i) {
    const float want = 30.0f * ref::tanh_lanes(x[i] / 30.0f);
    EXPECT_EQ(std::memcmp(&out[i], &want, sizeof want), 0) << i;
    EXPECT_NEAR(out[i], 30.0 * std::tanh(x[i] / 30.0), 4e-6 * 30.0) << i;
  }
  EXPECT_TRUE(std::signbit(out[7]));
  EXPECT_EQ(out[n - 1], 30.0f);
}

TEST(ReferenceOps, SwigluAndArgmax) {
  const float g[3] = {0, 1, -2};
  const float u[3] = {5, 2, 3};
  float out[3];
  ref::swiglu(out, g, u, 3);
  EXPECT_FLOAT_EQ(out[0], 0);
  EXPECT_FLOAT_EQ(out[1], 2 * (1 / (1 + std::exp(-1.0f))));
  EXPECT_FLOAT_EQ(out[2], 3 * (-2 / (1 + std::exp(2.0f))));
  const float x[5] = {1, 3, -1, 3, 2};
  EXPECT_EQ(ref::argmax(x, 5), 1);
}

// Attention read in place from a paged pool (rows wider than the layer's, blocks out of order, a
// window, soft-cap and sinks; each block's rows by KV head, paged_kv_layout.h) gives the bits of
// gathering the rows first.
TEST(ReferenceOps, PagedAttentionEqualsGatheredAttention) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist;
  const size_t block = 4, stride = 40, kv_dim = 2 * 16, n_slots = 8 * block;
  std::vector<float> keys(n_slots * stride), values(n_slots * stride), q(4 * 16), sinks{0.5f, -1.0f, 2.0f, 0.0f};
  for (float& v : keys) v = dist(rng);
  for (float& v : values) v = dist(rng);
  for (float& v : q) v = dist(rng);
  const std::vector<int32_t> table{5, 2, 7, 0, 3, 1};
  ref::AttentionParams p;
  p.n_heads = 4;
  p.n_kv_heads = 2;
  p.head_dim = 16;
  p.scale = 0.25f;
  p.softcap = 3.0f;
  p.sinks = sinks.data();
  for (const size_t first : {size_t{0}, size_t{6}}) {
    const size_t n = 22 - first;
    std::vector<float> k(n * kv_dim), v(n * kv_dim);
    for (size_t t = 0; t < n; ++t) {
      const size_t pos = first + t;
      const size_t slot = static_cast<size_t>(table[pos / block]) * block + pos % block;
      for (size_t h = 0; h < p.n_kv_heads; ++h) {  // head h's row: the block's h-th run of `block` rows
        const size_t row = slot / block * block * stride + (h * block + slot % block) * p.head_dim;
        std::copy_n(&keys[row], p.head_dim, &k[t * kv_dim + h * p.head_dim]);
        std::copy_n(&values[row], p.head_dim, &v[t * kv_dim + h * p.head_dim]);
      }
    }
    std::vector<float> gathered(4 * 16), paged(4 * 16);
    ref::attention(gathered.data(), q.data(), k.data(), v.data(), n, p);
    ref::attention_paged(paged.data(), q.data(), keys.data(), values.data(), table, block, first, n, stride, p);
    EXPECT_EQ(gathered, paged) << "first " << first;
  }
}

// The attention of one query head written out plainly in the documented order (8-lane dot, scale,
// soft-cap, max, exp, sum with the sink, probabilities times values): ref::attention (vectorized,
// AVX2 where the CPU has it) must give its bits exactly, for every head, whole or head by head.
float plain_dot(const float* a, const float* b, size_t n) {
  float lane[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (size_t j = 0; j < 8; ++j) lane[j] += a[i + j] * b[i + j];
  }
  float sum = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

TEST(ReferenceOps, AttentionHasThePlainOrdersBitsHeadByHead) {
  std::mt19937 rng(21);
  std::normal_distribution<float> dist;
  for (const size_t head_dim : {size_t{64}, size_t{72}, size_t{256}}) {
    const size_t n_heads = 6, n_kv = 2, n_ctx = 301, kv_dim = n_kv * head_dim;
    std::vector<float> q(n_heads * head_dim), k(n_ctx * kv_dim), v(n_ctx * kv_dim), sinks{0.3f, -1, 2, 0, 1, -2};
    for (float& x : q) x = dist(rng);
    for (float& x : k) x = dist(rng);
    for (float& x : v) x = dist(rng);
    ref::AttentionParams p;
    p.n_heads = n_heads;
    p.n_kv_heads = n_kv;
    p.head_dim = head_dim;
    p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    p.softcap = head_dim == 72 ? 20.0f : 0.0f;
    p.sinks = head_dim == 256 ? sinks.data() : nullptr;
    std::vector<float> whole(n_heads * head_dim), split(n_heads * head_dim, -1);
    ref::attention(whole.data(), q.data(), k.data(), v.data(), n_ctx, p);
    for (size_t h = n_heads; h-- > 0;) {  // one head per call, in another order
      ref::AttentionParams one = p;
      one.head_begin = h;
      one.head_end = h + 1;
      ref::attention(split.data(), q.data(), k.data(), v.data(), n_ctx, one);
    }
    EXPECT_EQ(whole, split) << "head_dim " << head_dim;
    for (size_t h = 0; h < n_heads; ++h) {
      const float* kh = k.data() + (h / (n_heads / n_kv)) * head_dim;
      const float* vh = v.data() + (h / (n_heads / n_kv)) * head_dim;
      std::vector<float> s(n_ctx);
      float max_score = p.sinks ? p.sinks[h] : -INFINITY;
      for (size_t t = 0; t < n_ctx; ++t) {
        s[t] = ref::attention_score(plain_dot(&q[h * head_dim], kh + t * kv_dim, head_dim), p);
        max_score = std::max(max_score, s[t]);
      }
      // exp(s - max) each, summed in eight lanes (position t in lane t % 8), then the tail, then the sink.
      float lane[8] = {};
      const size_t body = n_ctx - n_ctx % 8;
      for (size_t t = 0; t < body; ++t) lane[t % 8] += (s[t] = ref::exp_lanes(s[t] - max_score));
      float sum = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
      for (size_t t = body; t < n_ctx; ++t) sum += (s[t] = ref::exp_lanes(s[t] - max_score));
      if (p.sinks) sum += ref::exp_lanes(p.sinks[h] - max_score);
      std::vector<float> o(head_dim, 0.0f);
      for (size_t t = 0; t < n_ctx; ++t) {
        const float prob = s[t] / sum;
        for (size_t d = 0; d < head_dim; ++d) o[d] += prob * vh[t * kv_dim + d];
      }
      EXPECT_TRUE(std::equal(o.begin(), o.end(), whole.begin() + static_cast<std::ptrdiff_t>(h * head_dim)))
          << "head_dim " << head_dim << ", head " << h;
    }
  }
}

TEST(ReferenceOps, DotIsCloseToDouble) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  for (size_t n : {1u, 7u, 8u, 9u, 172u, 1000u}) {
    std::vector<float> a(n), b(n);
    double expected = 0;
    for (size_t i = 0; i < n; ++i) {
      a[i] = dist(rng);
      b[i] = dist(rng);
      expected += static_cast<double>(a[i]) * b[i];
    }
    EXPECT_NEAR(ref::dot(a.data(), b.data(), n), expected, 1e-4 * std::sqrt(static_cast<double>(n))) << n;
  }
}

// Quantized matmul equals the F32 matmul of the dequantized weights, bit for bit, for any token
// count and thread count.
TEST(ReferenceOps, QuantizedMatmulEqualsDequantizedF32) {
  const uint64_t rows = 37, cols = 96;
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  std::vector<float> w(rows * cols);
  for (float& f : w) f = dist(rng);
  std::vector<float> x(5 * cols);
  for (float& f : x) f = dist(rng);
  ThreadPool pool(3);
  for (GgmlType type : {GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    std::vector<uint8_t> q(rows * ggml_row_size(type, cols));
    for (uint64_t r = 0; r < rows; ++r) quantize_row(type, &w[r * cols], q.data() + r * ggml_row_size(type, cols), cols);
    const TensorRef tq = make_tensor(type, rows, cols, q);
    std::vector<float> deq(rows * cols);
    for (uint64_t r = 0; r < rows; ++r) dequantize_row(type, q.data() + r * ggml_row_size(type, cols), &deq[r * cols], cols);
    std::vector<uint8_t> f32_bytes(deq.size() * sizeof(float));
    std::memcpy(f32_bytes.data(), deq.data(), f32_bytes.size());
    const TensorRef tf = make_tensor(GgmlType::kF32, rows, cols, f32_bytes);

    std::vector<float> y_q(5 * rows), y_f(5 * rows), y_one(rows);
    ref::matmul(tq, x.data(), 5, y_q.data(), &pool);
    ref::matmul(tf, x.data(), 5, y_f.data(), nullptr);
    EXPECT_EQ(y_q, y_f) << ggml_type_name(type);
    for (size_t t = 0; t < 5; ++t) {
      ref::matvec(tq, &x[t * cols], y_one.data(), nullptr);
      EXPECT_TRUE(std::equal(y_one.begin(), y_one.end(), y_q.begin() + static_cast<std::ptrdiff_t>(t * rows)))
          << ggml_type_name(type) << " token " << t;
    }
    // Close to the unquantized product (loose: Q4_0 keeps 4 bits).
    std::vector<uint8_t> exact_bytes(w.size() * sizeof(float));
    std::memcpy(exact_bytes.data(), w.data(), exact_bytes.size());
    std::vector<float> y_exact(5 * rows);
    ref::matmul(make_tensor(GgmlType::kF32, rows, cols, exact_bytes), x.data(), 5, y_exact.data(), nullptr);
    double err = 0, norm = 0;
    for (size_t i = 0; i < y_exact.size(); ++i) {
      err += (y_q[i] - y_exact[i]) * (y_q[i] - y_exact[i]);
      norm += y_exact[i] * y_exact[i];
    }
    EXPECT_LT(std::sqrt(err / norm), type == GgmlType::kQ4_0 ? 0.2 : 0.02) << ggml_type_name(type);
  }
}

}  // namespace
}  // namespace vks
