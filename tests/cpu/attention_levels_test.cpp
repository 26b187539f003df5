// ref::attention's loop (engine/cpu/attention_rows.h) at each instruction-set level it is compiled
// for: the avx2 and avx512 copies must give the baseline copy's bits exactly, over the f32 reader
// and the quantized ones (Q8_0, Q4_0), for head sizes with and without 16-, 8- and 32-element
// tails, query-head groups of 1 to 67 (groups of 8, 4 and single heads; more than kMaxGroup), odd and even context lengths,
// with and without sinks and soft-capping, and for a thread's share of the heads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cpu/attention_level.h"
#include "engine/cpu/kv_quant.h"
#include "engine/cpu/reference_ops.h"

namespace vks {
namespace {

struct Shape {
  size_t head_dim, group, n_kv, n_ctx;
  bool sinks, softcap, share;  // share: heads [1, n_heads - 1) only
  std::string str() const {
    std::ostringstream s;
    s << "head_dim " << head_dim << ", group " << group << ", n_kv " << n_kv << ", n_ctx " << n_ctx
      << (sinks ? ", sinks" : "") << (softcap ? ", softcap" : "") << (share ? ", a share of the heads" : "");
    return s.str();
  }
};

// Context lengths: 1, both parities around the 2-position and 4-row steps, and random ones to 300.
std::vector<size_t> context_lengths(std::mt19937& rng) {
  std::vector<size_t> n{1, 2, 3, 5, 8, 17, 300};
  std::uniform_int_distribution<size_t> any(1, 300);
  for (int i = 0; i < 3; ++i) n.push_back(any(rng));
  return n;
}

std::vector<Shape> shapes(const std::vector<size_t>& head_dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Shape> out;
  size_t variant = 0;
  for (const size_t head_dim : head_dims) {
    for (const size_t group : {size_t{1}, size_t{3}, size_t{4}, size_t{8}, size_t{12}, size_t{67}}) {
      for (const size_t n_ctx : context_lengths(rng)) {
        const size_t v = variant++;
        const size_t n_kv = group == 67 ? 1 : 1 + v % 3;
        out.push_back({head_dim, group, n_kv, n_ctx, v % 2 == 0, v % 3 == 1, v % 5 == 2 && group * n_kv > 2});
      }
    }
  }
  return out;
}

std::vector<float> normal_values(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// One call's inputs: a paged pool whose blocks are out of order, positions starting past 0.
struct Case {
  static constexpr size_t kBlock = 16;
  ref::AttentionParams p;
  size_t stride = 0, first = 0, n_ctx = 0;
  std::vector<float> q, keys, values, sinks;
  std::vector<int32_t> table;

  Case(const Shape& s, std::mt19937& rng) {
    p.n_kv_heads = s.n_kv;
    p.n_heads = s.group * s.n_kv;
    p.head_dim = s.head_dim;
    p.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
    p.softcap = s.softcap ? 20.0f : 0.0f;
    if (s.share) {
      p.head_begin = 1;
      p.head_end = p.n_heads - 1;
    }
    stride = s.n_kv * s.head_dim;
    first = s.n_ctx % 7;
    n_ctx = s.n_ctx;
    const size_t n_blocks = (first + s.n_ctx + kBlock - 1) / kBlock;
    table.resize(n_blocks);
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), rng);
    q = normal_values(p.n_heads * s.head_dim, rng);
    keys = normal_values(n_blocks * kBlock * stride, rng);
    values = normal_values(keys.size(), rng);
    if (s.sinks) {
      sinks = normal_values(p.n_heads, rng);
      p.sinks = sinks.data();
    }
  }
};

bool runs(ref::AttendLevel level) { return level <= ref::fastest_attend_level(); }

// Every shape's output at `level` against the baseline's, bit for bit. attend(level, case, out)
// runs one call.
template <class Attend>
void expect_baseline_bits(ref::AttendLevel level, const std::vector<Shape>& all, uint32_t seed, Attend attend) {
  std::mt19937 rng(seed);
  for (const Shape& s : all) {
    const Case c(s, rng);
    // Heads outside a share keep the fill; NaN would compare unequal to itself, so a number.
    std::vector<float> want(c.q.size(), -3.0f), got(c.q.size(), -3.0f);
    attend(ref::AttendLevel::kBaseline, c, want);
    attend(level, c, got);
    const auto diff = std::mismatch(want.begin(), want.end(), got.begin(),
                                    [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; });
    EXPECT_TRUE(diff.first == want.end()) << ref::attend_level_name(level) << ", " << s.str() << ": element "
                                          << (diff.first - want.begin()) << " is " << *diff.second << ", baseline "
                                          << *diff.first;
  }
}

void f32_attend(ref::AttendLevel level, const Case& c, std::vector<float>& out) {
  ref::attention_paged(out.data(), c.q.data(), c.keys.data(), c.values.data(), c.table, Case::kBlock, c.first,
                       c.n_ctx, c.stride, c.p, level);
}

// A quantized reader over the same values quantized (it decodes two key rows at a time at avx512).
template <KvType kType>
void quant_attend(ref::AttendLevel level, const Case& c, std::vector<float>& out) {
  std::vector<uint8_t> kq(kv_plane_bytes(kType, c.keys.size())), vq(kq.size());
  std::vector<float> ks(c.keys.size() / cpu::kKvBlock), vs(ks.size());
  cpu::quantize_kv(kType, c.keys.data(), c.keys.size(), kq.data(), ks.data());
  cpu::quantize_kv(kType, c.values.data(), c.values.size(), vq.data(), vs.data());
  cpu::attention_paged_quant(out.data(), c.q.data(), cpu::QuantKvPools{kType, kq.data(), ks.data(), vq.data(), vs.data()},
                             c.table, Case::kBlock, c.first, c.n_ctx, c.stride, c.p, level);
}

// head_dim 20: neither 16- nor 8-element steps alone; 8, 24, 40, 72: an 8-element step after the
// 16-element ones (values) and odd counts of 8-element steps (scores).
const std::vector<size_t> kF32HeadDims{8, 20, 24, 40, 64, 72, 80, 128};
const std::vector<size_t> kQuantHeadDims{32, 64, 96, 128};  // quantized blocks may not straddle heads

void run_or_skip(ref::AttendLevel level, KvType type) {
  if (!runs(level)) {
    GTEST_SKIP() << "this CPU does not execute the " << ref::attend_level_name(level) << " copy";
  }
  if (type == KvType::kQ8_0) {
    expect_baseline_bits(level, shapes(kQuantHeadDims, 5), 6, quant_attend<KvType::kQ8_0>);
  } else if (type == KvType::kQ4_0) {
    expect_baseline_bits(level, shapes(kQuantHeadDims, 7), 8, quant_attend<KvType::kQ4_0>);
  } else {
    expect_baseline_bits(level, shapes(kF32HeadDims, 3), 4, f32_attend);
  }
}

TEST(AttentionLevels, Avx2GivesTheBaselinesBits) { run_or_skip(ref::AttendLevel::kAvx2, KvType::kF16); }
TEST(AttentionLevels, Avx512GivesTheBaselinesBits) { run_or_skip(ref::AttendLevel::kAvx512, KvType::kF16); }
TEST(AttentionLevels, Avx2GivesTheBaselinesBitsOverQ8Rows) { run_or_skip(ref::AttendLevel::kAvx2, KvType::kQ8_0); }
TEST(AttentionLevels, Avx512GivesTheBaselinesBitsOverQ8Rows) { run_or_skip(ref::AttendLevel::kAvx512, KvType::kQ8_0); }
TEST(AttentionLevels, Avx2GivesTheBaselinesBitsOverQ4Rows) { run_or_skip(ref::AttendLevel::kAvx2, KvType::kQ4_0); }
TEST(AttentionLevels, Avx512GivesTheBaselinesBitsOverQ4Rows) { run_or_skip(ref::AttendLevel::kAvx512, KvType::kQ4_0); }

// A level the CPU lacks is lowered to the highest it has: its bits, no illegal instruction.
TEST(AttentionLevels, ALevelTheCpuLacksRunsTheHighestItHas) {
  std::mt19937 rng(9);
  const Case c({64, 4, 2, 33, true, false, false}, rng);
  std::vector<float> want(c.q.size()), got(c.q.size());
  f32_attend(ref::fastest_attend_level(), c, want);
  f32_attend(ref::AttendLevel::kAvx512, c, got);
  EXPECT_EQ(want, got);
}

}  // namespace
}  // namespace vks
