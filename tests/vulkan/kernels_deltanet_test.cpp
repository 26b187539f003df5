// The Gated DeltaNet kernels (deltanet_conv_f32, l2norm_f32, deltanet_rule_f32) and the sigmoid gate
// (sigmoid_gate_f32) against plain C++ references written from llama.cpp's definitions: several
// sequences in one dispatch, chunks of 1 to 300 tokens, sequences starting afresh beside ones that
// continue a state, in state slots out of order. The delta rule's 300-token chunk at head size 128
// spans several dispatches (deltanet_tokens_per_dispatch), each leaving the state for the next.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/reference_ops.h"
#include "engine/vulkan/runner/deltanet_kernels.h"
#include "tests/vulkan/kernels_test_util.h"

namespace vks::vk::test {
namespace {

using DeltaNetKernels = KernelTest;

// One sequence's chunk of a step, as the kernels read it.
struct Chunk {
  int32_t first, n_tokens, slot, fresh;
};

std::vector<int32_t> seq_fields(const std::vector<Chunk>& chunks) {
  std::vector<int32_t> v;
  for (const Chunk& c : chunks) v.insert(v.end(), {c.first, c.n_tokens, c.slot, c.fresh});
  return v;
}

std::vector<int32_t> token_seqs(const std::vector<Chunk>& chunks) {
  std::vector<int32_t> v;
  for (size_t s = 0; s < chunks.size(); ++s) v.insert(v.end(), static_cast<size_t>(chunks[s].n_tokens), static_cast<int32_t>(s));
  return v;
}

TEST_F(DeltaNetKernels, ConvMatchesReferenceAndShiftsEachSequencesState) {
  const uint32_t channels = 72, kernel = 4, past = kernel - 1, x_stride = 80, out_stride = 76, slots = 6;
  const uint32_t slot_floats = past * channels;
  // Chunks shorter than the state (1, 2 tokens), longer, fresh and continued, slots out of order;
  // slot 5 is nobody's.
  const std::vector<Chunk> chunks{{0, 7, 3, 1}, {7, 1, 0, 0}, {8, 2, 4, 0}, {10, 5, 1, 0}, {15, 1, 2, 1}};
  const uint32_t n = 16;
  const std::vector<float> x = random_floats(n * x_stride, 1);
  const std::vector<float> w = random_floats(channels * kernel, 2, 0.5f);
  const std::vector<float> state = random_floats(slots * slot_floats, 3);
  Buffer xb = upload(x), wb = upload(w), sb = upload(state), ob = upload(std::vector<float>(n * out_stride, 0.0f));
  Buffer tb = upload(token_seqs(chunks)), qb = upload(seq_fields(chunks));
  run([&](CommandBuffer& cmd) {
    record_deltanet_conv(cmd, kernels(), DeltaNetConvBindings{xb.view(), wb.view(), sb.view(), ob.view(), tb.view(), qb.view()},
                         shader::DeltaNetConvParams{channels, kernel, x_stride, out_stride, slot_floats, 0}, n,
                         static_cast<uint32_t>(chunks.size()));
  });
  const std::vector<float> out = download<float>(ob, n * out_stride);
  const std::vector<float> new_state = download<float>(sb, slots * slot_floats);

  std::vector<float> want_out(n * out_stride, 0.0f), want_state = state;
  for (const Chunk& c : chunks) {
    float* st = &want_state[c.slot * slot_floats];
    if (c.fresh != 0) std::fill_n(st, slot_floats, 0.0f);
    for (int32_t i = 0; i < c.n_tokens; ++i) {  // the CPU's conv_step, token by token
      const uint32_t t = static_cast<uint32_t>(c.first + i);
      for (uint32_t ch = 0; ch < channels; ++ch) {
        float sum = 0.0f;
        for (uint32_t k = 0; k < past; ++k) sum += w[ch * kernel + k] * st[k * channels + ch];
        sum += w[ch * kernel + past] * x[t * x_stride + ch];
        for (uint32_t k = 0; k + 1 < past; ++k) st[k * channels + ch] = st[(k + 1) * channels + ch];
        st[(past - 1) * channels + ch] = x[t * x_stride + ch];
        want_out[t * out_stride + ch] = sum * ref::sigmoid(sum);
      }
    }
  }
  EXPECT_LT(normalized_error(out, want_out), 1e-6);
  // The state holds inputs as they were: copies, bit for bit (the unused slot untouched).
  for (size_t i = 0; i < want_state.size(); ++i) ASSERT_EQ(new_state[i], want_state[i]) << "state float " << i;
  // Columns past the channels are not written.
  for (uint32_t t = 0; t < n; ++t) ASSERT_EQ(out[t * out_stride + channels], 0.0f);
}

TEST_F(DeltaNetKernels, PerHeadL2NormMatchesReference) {
  struct Case {
    uint32_t rows, heads, head_dim, stride;
  };
  for (const Case c : {Case{7, 4, 32, 260}, Case{3, 32, 128, 4096 + 8}, Case{5, 3, 10, 33}}) {
    std::vector<float> x = random_floats(c.rows * c.stride, c.head_dim, 3.0f);
    std::fill_n(x.begin() + 2 * c.head_dim, c.head_dim, 0.0f);  // a zero head: divided by eps, stays 0
    Buffer xb = upload(x);
    run([&](CommandBuffer& cmd) { ops().l2norm_heads(cmd, xb.view(), c.stride, c.rows, c.heads, c.head_dim, 1e-6f); });
    const std::vector<float> got = download<float>(xb, c.rows * c.stride);
    std::vector<float> want = x;
    for (uint32_t r = 0; r < c.rows; ++r) {
      for (uint32_t h = 0; h < c.heads; ++h) {
        float* v = &want[r * c.stride + h * c.head_dim];
        double sum = 0;
        for (uint32_t i = 0; i < c.head_dim; ++i) sum += double{v[i]} * v[i];
        const float scale = 1.0f / std::max(static_cast<float>(std::sqrt(sum)), 1e-6f);
        for (uint32_t i = 0; i < c.head_dim; ++i) v[i] *= scale;
      }
    }
    EXPECT_LT(normalized_error(got, want), 1e-6) << "heads " << c.heads << " head_dim " << c.head_dim;
    for (uint32_t r = 0; r < c.rows; ++r) {
      for (uint32_t i = c.heads * c.head_dim; i < c.stride; ++i) ASSERT_EQ(got[r * c.stride + i], x[r * c.stride + i]);
    }
  }
}

// The delta rule of llama.cpp's Qwen3.5 graph, one value head j (q/k head j mod groups) of one token.
void reference_rule(float* S, const float* q, const float* k, const float* v, float decay, float beta, float scale,
                    uint32_t d, float* o) {
  std::vector<float> update(d, 0.0f);
  for (uint32_t i = 0; i < d; ++i) {
    for (uint32_t c = 0; c < d; ++c) {
      S[i * d + c] *= decay;
      update[c] += S[i * d + c] * k[i];
    }
  }
  for (uint32_t c = 0; c < d; ++c) update[c] = beta * (v[c] - update[c]);
  for (uint32_t c = 0; c < d; ++c) o[c] = 0.0f;
  for (uint32_t i = 0; i < d; ++i) {
    for (uint32_t c = 0; c < d; ++c) {
      S[i * d + c] += k[i] * update[c];
      o[c] += S[i * d + c] * q[i];
    }
  }
  for (uint32_t c = 0; c < d; ++c) o[c] *= scale;
}

struct RuleCase {
  uint32_t head_dim, groups, heads;
  std::vector<Chunk> chunks;
};

TEST_F(DeltaNetKernels, DeltaRuleMatchesReference) {
  const std::vector<RuleCase> cases{
      {32, 2, 4, {{0, 9, 2, 1}, {9, 1, 0, 0}, {10, 3, 3, 0}, {13, 1, 1, 1}}},
      // 300 tokens at head size 128: more than one dispatch's worth.
      {128, 1, 2, {{0, 300, 1, 0}, {300, 2, 0, 1}}},
      {48, 3, 3, {{0, 4, 0, 0}}},  // a head wider than one workgroup of columns, not a multiple of it
  };
  for (const RuleCase& rc : cases) {
    const uint32_t hd = rc.head_dim, qk = rc.groups * hd, vd = rc.heads * hd;
    const uint32_t n = static_cast<uint32_t>(rc.chunks.back().first + rc.chunks.back().n_tokens);
    const uint32_t slots = 4, slot_floats = rc.heads * hd * hd;
    const uint32_t x_stride = 2 * qk + vd + 4, gate_stride = 2 * rc.heads + 8, beta_at = 3, alpha_at = 3 + rc.heads;
    const uint32_t out_stride = vd + 4;
    if (rc.head_dim == 128) {
      ASSERT_GT(n, deltanet_tokens_per_dispatch(hd)) << "the long chunk must span dispatches";
    }
    std::vector<float> x = random_floats(n * x_stride, hd);
    for (uint32_t t = 0; t < n; ++t) {  // q and k L2-normed per head, as the conv's output reaches the rule
      for (uint32_t h = 0; h < 2 * rc.groups; ++h) {
        float* v = &x[t * x_stride + h * hd];
        double sum = 0;
        for (uint32_t i = 0; i < hd; ++i) sum += double{v[i]} * v[i];
        for (uint32_t i = 0; i < hd; ++i) v[i] = static_cast<float>(v[i] / std::sqrt(sum));
      }
    }
    const std::vector<float> gates = random_floats(n * gate_stride, hd + 1, 2.0f);
    const std::vector<float> dt_bias = random_floats(rc.heads, hd + 2);
    std::vector<float> a = random_floats(rc.heads, hd + 3);
    for (float& v : a) v = -0.05f - std::fabs(v) * 0.5f;  // -exp(A_log) < 0: a decay below 1
    const std::vector<float> state = random_floats(slots * slot_floats, hd + 4, 0.3f);
    Buffer xb = upload(x), gb = upload(gates), db = upload(dt_bias), ab = upload(a), sb = upload(state);
    Buffer qb = upload(seq_fields(rc.chunks)), ob = upload(std::vector<float>(n * out_stride, 0.0f));
    shader::DeltaNetRuleParams p{};
    p.head_dim = hd;
    p.n_groups = rc.groups;
    p.x_stride = x_stride;
    p.k_at = qk;
    p.v_at = 2 * qk;
    p.gate_stride = gate_stride;
    p.beta_at = beta_at;
    p.alpha_at = alpha_at;
    p.out_stride = out_stride;
    p.slot_floats = slot_floats;
    p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    uint32_t longest = 0;
    for (const Chunk& c : rc.chunks) longest = std::max(longest, static_cast<uint32_t>(c.n_tokens));
    run([&](CommandBuffer& cmd) {
      record_deltanet_rule(cmd, kernels(), DeltaNetRuleBindings{xb.view(), gb.view(), db.view(), ab.view(), sb.view(), qb.view(), ob.view()},
                           p, rc.heads, static_cast<uint32_t>(rc.chunks.size()), longest);
    });
    const std::vector<float> out = download<float>(ob, n * out_stride);
    const std::vector<float> new_state = download<float>(sb, slots * slot_floats);

    std::vector<float> want_out(n * out_stride, 0.0f), want_state = state;
    for (const Chunk& c : rc.chunks) {
      float* slot = &want_state[c.slot * slot_floats];
      if (c.fresh != 0) std::fill_n(slot, slot_floats, 0.0f);
      for (int32_t i = 0; i < c.n_tokens; ++i) {
        const uint32_t t = static_cast<uint32_t>(c.first + i);
        const float* row = &x[t * x_stride];
        for (uint32_t j = 0; j < rc.heads; ++j) {
          const uint32_t g = j % rc.groups;
          const float raw = gates[t * gate_stride + alpha_at + j] + dt_bias[j];
          const float softplus = raw > 20.0f ? raw : std::log1p(std::exp(raw));
          const float decay = std::exp(softplus * a[j]);
          const float beta = ref::sigmoid(gates[t * gate_stride + beta_at + j]);
          reference_rule(slot + j * hd * hd, row + g * hd, row + qk + g * hd, row + 2 * qk + j * hd, decay, beta,
                         p.scale, hd, &want_out[t * out_stride + j * hd]);
        }
      }
    }
    EXPECT_LT(normalized_error(out, want_out), 2e-5) << "head_dim " << hd;
    EXPECT_LT(normalized_error(new_state, want_state), 2e-5) << "head_dim " << hd;
    if (rc.head_dim == 128) {  // slot 2: no chunk's
      EXPECT_TRUE(std::equal(&state[2 * slot_floats], &state[3 * slot_floats], &new_state[2 * slot_floats]));
    }
  }
}

TEST_F(DeltaNetKernels, SigmoidGateScalesByItsGateOrOneGateARow) {
  const uint32_t rows = 6, cols = 130, x_stride = 136, gate_stride = 140;
  const std::vector<float> x = random_floats(rows * x_stride, 11, 2.0f);
  const std::vector<float> gate = random_floats(rows * gate_stride, 12, 4.0f);
  for (const bool broadcast : {false, true}) {
    Buffer xb = upload(x), gb = upload(gate);
    run([&](CommandBuffer& cmd) { ops().sigmoid_gate(cmd, xb.view(), x_stride, gb.view(), gate_stride, rows, cols, broadcast); });
    const std::vector<float> got = download<float>(xb, rows * x_stride);
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t i = 0; i < x_stride; ++i) {
        const float v = x[r * x_stride + i];
        if (i >= cols) {
          ASSERT_EQ(got[r * x_stride + i], v);
          continue;
        }
        const float want = v * ref::sigmoid(gate[r * gate_stride + (broadcast ? 0 : i)]);
        ASSERT_NEAR(got[r * x_stride + i], want, 1e-6f * (1.0f + std::fabs(want))) << broadcast << " " << r << "," << i;
      }
    }
  }
}

}  // namespace
}  // namespace vks::vk::test
