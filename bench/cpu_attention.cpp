// The CPU backend's attention (engine/cpu/attention_rows.h) at each level this CPU executes, over
// paged F32, Q8_0 and Q4_0 pools: microseconds per call (one token, every head) and GB/s of key and value
// rows read, from memory as a batched decode reads them (each call another sequence's blocks,
// scattered over pools larger than this machine's caches) and in cache (one sequence again and
// again). Every level gives the same bits (cpu_attention_levels_test); this says what each costs.
// Shared machines are noisy: read the ratios between levels measured in one run.
//   vks_bench_cpu_attention [--heads 32] [--kv-heads 4] [--head-dim 64] [--contexts 160 1024]
//                           [--seconds 0.3] [--pool-mib 512]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "engine/cpu/attention_level.h"
#include "engine/cpu/kv_quant.h"
#include "engine/cpu/reference_ops.h"

namespace {

using Clock = std::chrono::steady_clock;
using vks::ref::AttendLevel;

constexpr size_t kBlock = 16;  // positions per block, the runner's default

// Cheap noise: filling pools of hundreds of MiB with a proper generator takes seconds.
struct Noise {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint32_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return static_cast<uint32_t>(s >> 32);
  }
  float unit() { return static_cast<float>(next() >> 8) / 8388608.0f - 1.0f; }  // [-1, 1)
};

struct Pools {
  size_t stride = 0, n_seqs = 0, blocks_per_seq = 0;
  std::vector<float> keys, values;                 // F32 pools
  std::vector<uint8_t> key_q, value_q;             // Q8_0 pools, as many slots (Q4_0 reads the first half)
  std::vector<float> key_scales, value_scales;
  std::vector<int32_t> tables;                     // [n_seqs][blocks_per_seq], blocks shuffled over the pool
  std::span<const int32_t> table(size_t seq) const {
    return {tables.data() + seq * blocks_per_seq, blocks_per_seq};
  }
};

Pools make_pools(size_t stride, size_t max_ctx, size_t pool_bytes) {
  Pools p;
  p.stride = stride;
  p.blocks_per_seq = (max_ctx + kBlock - 1) / kBlock;
  const size_t seq_bytes = p.blocks_per_seq * kBlock * stride * sizeof(float) * 2;
  p.n_seqs = std::max<size_t>(1, pool_bytes / seq_bytes);
  const size_t slots = p.n_seqs * p.blocks_per_seq * kBlock;
  Noise noise;
  p.keys.resize(slots * stride);
  p.values.resize(slots * stride);
  for (float& x : p.keys) x = noise.unit();
  for (float& x : p.values) x = noise.unit();
  p.key_q.resize(slots * stride);
  p.value_q.resize(slots * stride);
  for (uint8_t& x : p.key_q) x = static_cast<uint8_t>(noise.next());
  for (uint8_t& x : p.value_q) x = static_cast<uint8_t>(noise.next());
  p.key_scales.assign(slots * stride / vks::cpu::kKvBlock, 1.0f / 127.0f);
  p.value_scales = p.key_scales;
  p.tables.resize(p.n_seqs * p.blocks_per_seq);
  std::iota(p.tables.begin(), p.tables.end(), 0);
  std::shuffle(p.tables.begin(), p.tables.end(), std::mt19937(7));
  return p;
}

// Microseconds per call: calls over sequences 0, 1, ... (in_memory) or sequence 0 alone, for
// `seconds` at least.
template <class Call>
double us_per_call(bool in_memory, size_t n_seqs, double seconds, Call call) {
  for (size_t i = 0; i < 3; ++i) call(0);  // warm-up: thread-local buffers, code
  size_t calls = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    for (size_t i = 0; i < 16; ++i, ++calls) call(in_memory ? calls % n_seqs : 0);
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  return elapsed * 1e6 / static_cast<double>(calls);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU attention per level: microseconds per call and GB/s of K and V read"};
  size_t heads = 32, kv_heads = 4, head_dim = 64, pool_mib = 512;
  std::vector<size_t> contexts{160, 1024};
  double seconds = 0.3;
  app.add_option("--heads", heads, "query heads");
  app.add_option("--kv-heads", kv_heads, "KV heads");
  app.add_option("--head-dim", head_dim, "head size (a multiple of 32 for the quantized pools)");
  app.add_option("--contexts", contexts, "positions attended");
  app.add_option("--seconds", seconds, "time per figure");
  app.add_option("--pool-mib", pool_mib, "F32 pools' size (larger than the caches)");
  CLI11_PARSE(app, argc, argv);
  if (kv_heads == 0 || heads % kv_heads != 0 || head_dim % vks::cpu::kKvBlock != 0 || contexts.empty()) {
    std::fprintf(stderr, "heads must be a multiple of kv-heads, head-dim of %zu, and contexts given\n",
                 vks::cpu::kKvBlock);
    return 2;
  }
  const size_t stride = kv_heads * head_dim;
  const Pools pools = make_pools(stride, *std::max_element(contexts.begin(), contexts.end()), pool_mib << 20);
  vks::ref::AttentionParams p;
  p.n_heads = heads;
  p.n_kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> q(heads * head_dim, 0.1f), out(heads * head_dim);
  std::printf("heads %zu/%zu, head_dim %zu, %zu sequences' blocks in the pools, highest level %s\n", heads, kv_heads,
              head_dim, pools.n_seqs, vks::ref::attend_level_name(vks::ref::fastest_attend_level()));
  std::printf("%-6s %-7s %6s %12s %12s %14s %14s\n", "pool", "level", "n_ctx", "us (memory)", "GB/s", "us (in cache)",
              "GB/s");
  for (const vks::KvType type : {vks::KvType::kF16, vks::KvType::kQ8_0, vks::KvType::kQ4_0}) {
    const bool f32 = type == vks::KvType::kF16;
    for (const size_t n_ctx : contexts) {
      // K and V rows of every KV head at every position.
      const double bytes = 2.0 * static_cast<double>(f32 ? n_ctx * stride * sizeof(float) : vks::kv_row_bytes(type, n_ctx * stride));
      for (int l = 0; l <= static_cast<int>(vks::ref::fastest_attend_level()); ++l) {
        const auto level = static_cast<AttendLevel>(l);
        auto call = [&](size_t seq) {
          if (f32) {
            vks::ref::attention_paged(out.data(), q.data(), pools.keys.data(), pools.values.data(), pools.table(seq),
                                      kBlock, 0, n_ctx, stride, p, level);
          } else {
            const vks::cpu::QuantKvPools quant{type, pools.key_q.data(), pools.key_scales.data(), pools.value_q.data(),
                                               pools.value_scales.data()};
            vks::cpu::attention_paged_quant(out.data(), q.data(), quant, pools.table(seq), kBlock, 0, n_ctx, stride, p,
                                            level);
          }
        };
        const double memory = us_per_call(true, pools.n_seqs, seconds, call);
        const double cached = us_per_call(false, pools.n_seqs, seconds, call);
        std::printf("%-6s %-7s %6zu %12.1f %12.2f %14.1f %14.2f\n", f32 ? "f32" : vks::kv_type_name(type).data(),
                    vks::ref::attend_level_name(level), n_ctx, memory, bytes / memory / 1e3, cached,
                    bytes / cached / 1e3);
      }
    }
  }
  return 0;
}
