// The AMX level's Q4_0 and Q8_0 on weights packed in groups of 16 rows (WeightLayout::kRows16,
// packed_rows.h): per group and block, the 16 rows' fp16 scales side by side (one load and one
// conversion give row r's d_w in lane r) and then the quants in the VNNI order, dword k of rows
// 0..15 in 64 bytes. Under the "block sums" convention (kernels.h), to the bits of the GGUF-layout
// kernels of kernels_amx.cpp: the same exact integer sums per block and output, the same float step
// (d_w * d_x commutes, so the 16 rows' d_w times a token's d_x is the GGUF tiles' d_w times 16
// tokens' d_x).
//
// What the layout saves: a group is one sequential stream (no 16 row streams, no gathers of
// scales), the quants are vpdpbusd's weight operand and a tile's B operand as they lie (no
// transposes), and the tiles take the tokens as A (rows of 32 bytes, copied side by side once per
// call, no transposes): C then holds a token's 16 rows in one register, stored as one run of y
// (no transposed outputs), and a partial tile is configured to its token count, so it costs its
// tokens, not 16.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernel_util.h"
#include "engine/cpu/quant/kernels.h"
#include "engine/cpu/quant/qmatmul.h"  // QmatmulScratch: per-thread buffers that only grow

// Everything below is compiled for this level's target (kernels.h: nothing here is shared).
#if defined(__clang__)
#pragma clang attribute push(                                                                                    \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c,amx-tile,amx-int8"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c,amx-tile,amx-int8")
// GCC 12's AVX-512 headers (see kernels_avx512vnni.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace vks::cpuq {
namespace {

#include "engine/cpu/quant/amx_tiles.inc"

constexpr size_t kGroupRows = 16;
constexpr size_t kTileTokens = 16;  // a tile's most rows (A and C): tokens
constexpr size_t kScaleBytes = 2 * kGroupRows;  // a packed block's scales, before its quants
constexpr size_t kUnpackedB = 8 * 64;  // one block of a group as a tile's B: 8 rows of 64 bytes

// kDwords: a row's quant dwords per block (64 bytes of them per packed block). kTileFrom: the
// fewest tokens that take a tile of their own token count (a last partial tile, or a call of
// fewer than 16); fewer take the avx512vnni level's vpdpbusd kernel (few_tokens). Where the two
// paths' times crossed, built with each at
// every token count (vks_bench_cpu_kernels --packed --packed-tokens 4 6 8 10 12 14 15, 2048x2048
// and 5632x2048, two rounds, from memory and in cache): Q4_0's vpdpbusd path was faster up to 10
// tokens, the tile from 12-14 (Q4_0's tile unpacks the group first); Q8_0's tile was as fast from
// 4-6 and faster from 8-10.
struct Q4_0Packed {
  static constexpr size_t kBytes = 18;
  static constexpr size_t kDwords = 4;
  static constexpr size_t kTileFrom = 12;
  static constexpr GemmFn few_tokens = block_sums_q4_0_packed;
};
struct Q8_0Packed {
  static constexpr size_t kBytes = 34;
  static constexpr size_t kDwords = 8;
  static constexpr size_t kTileFrom = 8;
  static constexpr GemmFn few_tokens = block_sums_q8_0_packed;
};

// The 16 rows' d_w of the packed block at blk, row r in lane r.
inline __m512 scales(const uint8_t* blk) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
}

// The next group is prefetched into L2 a block's share per block step: the group being read is
// one stream the hardware prefetchers follow, and an L1 prefetch would hold line fill buffers its
// loads wait for (kernels_amx.cpp's measurements).
inline void prefetch_step(const uint8_t* p, size_t bytes) { util::prefetch_range<util::PrefetchTo::kL2>(p, bytes); }

// ---- tiles: tokens as A (prepared once per call, below); the packed quants as B ----

// Tiles 0 and 3: A (m tokens x 32 bytes); 1 and 4: B (8 rows x 64 bytes: dword k of 16 rows per
// row); 2 and 5: C (m tokens x 16 int32). Two sets: two blocks in flight; 6 and 7 two more C tiles,
// four blocks in flight, the second two reusing A and B once the first two's products have read
// them.
TileConfig make_config(size_t m) {
  TileConfig c;
  for (int set : {0, 3}) {
    c.rows[set] = static_cast<uint8_t>(m);
    c.colsb[set] = 32;
    c.rows[set + 1] = 8;
    c.colsb[set + 1] = 64;
    c.rows[set + 2] = static_cast<uint8_t>(m);
    c.colsb[set + 2] = 64;
  }
  for (int extra : {6, 7}) {
    c.rows[extra] = static_cast<uint8_t>(m);
    c.colsb[extra] = 64;
  }
  return c;
}

// Where a group's B tiles lie: Q8_0's packed quants as they are (signed, tdpbssd), Q4_0's unpacked
// less 8 into a per-thread scratch once per group (low nibbles rows 0-3, high ones 4-7), so that
// the product includes the offset.
struct BSource {
  const uint8_t* base;
  size_t step;  // bytes from one block's B to the next
  const uint8_t* at(size_t b) const { return base + b * step; }
};

thread_local QmatmulScratch t_unpacked;
// Q8_0: a group's 16 rows' d_w per block as floats, converted once for all its tiles where it has
// more than one (the float step, not the tile products, bounds the tiles: see tile_group; for one
// tile the conversion pass cost 8-11% at 8 tokens). Q4_0 converts them in place per tile: beside
// its unpacked B, the extra scratch cost more than it saved (0.89-0.97x at 128 tokens,
// vks_bench_cpu_kernels --packed --packed-tokens 16 128, both orders of two alternating rounds,
// where Q8_0 gained 1.05-1.08x).
thread_local QmatmulScratch t_scales;

// Block b's 16 d_w from the group's converted scales dw (kConverted) or the group at g.
template <class K, bool kConverted>
inline __m512 block_scales(const uint8_t* g, const float* dw, size_t b) {
  if constexpr (kConverted) {
    return _mm512_load_ps(dw + 16 * b);
  } else {
    return scales(g + b * kGroupRows * K::kBytes);
  }
}

template <class K>
BSource group_b(const uint8_t* g, size_t n_blocks) {
  constexpr size_t kBlock = kGroupRows * K::kBytes;
  if constexpr (K::kDwords == 8) {
    return {g + kScaleBytes, kBlock};
  } else {
    // The nibbles less 8, in B's row order: dword k's low nibbles (elements 4k..) as row k, its
    // high ones (16 + 4k..) as row 4 + k.
    uint8_t* out = t_unpacked.reserve(n_blocks * kUnpackedB);
    const __m512i m4 = _mm512_set1_epi8(0xF), eight = _mm512_set1_epi8(8);
    for (size_t b = 0; b < n_blocks; ++b) {
      for (size_t k = 0; k < 4; ++k) {
        const __m512i v = _mm512_loadu_si512(g + b * kBlock + kScaleBytes + 64 * k);
        uint8_t* row = out + b * kUnpackedB + 64 * k;
        _mm512_store_si512(row, _mm512_sub_epi8(_mm512_and_si512(v, m4), eight));
        _mm512_store_si512(row + 256, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), eight));
      }
    }
    return {out, kUnpackedB};
  }
}

// Whole tiles of 16 tokens read a copy of their activations prepared once per qmatmul call
// (kernels.h's PreparedKernel): per block, the 16 tokens' 32 bytes side by side (A, rows 32 bytes
// apart) and then their 16 d_x. Read in place, the activations were 96 bytes per 32 values when
// this was measured (80 since): 128 tokens of 5632 columns (2.2 MB) did not stay in L2 while a work item's groups swept them, and
// their rows, act_stride apart, fell into few L1 sets (2048x2048 at 128 tokens ran at 0.8x the
// GGUF-layout kernel, 2048x5632 at 0.6x).
struct alignas(64) PreparedBlock {
  int8_t qs[kTileTokens][32];
  float d[kTileTokens];
};
static_assert(sizeof(PreparedBlock) == 576);

// acc[t] += float(C[t]) * (d_w * d_x[t]) for the M tokens of one block's C (row t: token t's 16 rows).
template <int M>
inline void scale_add(const int32_t* c, __m512 dw, const float* dx, __m512* acc) {
  // Unrolled, so that acc stays in registers (GCC otherwise kept it in memory, a load and a store
  // per token and block).
#pragma GCC unroll 16
  for (int t = 0; t < M; ++t) {
    const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(dx[t]));
    acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * t)), scale));
  }
}

// One group of 16 rows (at g; its scales converted in dw where kConverted) times the M tokens of prepared blocks
// x, every block, into y (token t's 16 outputs at y + t * y_stride). next: the next group's bytes,
// prefetched into L2 a share per block step (null: none).
template <class K, int M, bool kConverted>
void tile_group(const BSource& bsrc, const uint8_t* g, const float* dw, const PreparedBlock* x, size_t n_blocks,
                const uint8_t* next, float* y, size_t y_stride) {
  constexpr size_t kBlock = kGroupRows * K::kBytes;
  alignas(64) int32_t c[4][kTileTokens * 16];
  __m512 acc[M];
  // The zeroing and the final stores unrolled too: as loops (the zeroing became a rep stos), they
  // kept acc an array in memory, loaded and stored around every four blocks' float step, which
  // bounds the tiles (packed Q8_0 ran 0.85-0.93x the GGUF layout at 128 tokens).
#pragma GCC unroll 16
  for (int t = 0; t < M; ++t) acc[t] = _mm512_setzero_ps();
  // A local, not the source's fields: the tile loads' memory clobbers would reload those each time.
  const BSource bs = bsrc;
  size_t b = 0;
  for (; b + 4 <= n_blocks; b += 4) {
    if (next != nullptr) prefetch_step(next + b * kBlock, 4 * kBlock);
    _tile_zero(2);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
    VKS_TILE_LOAD(0, x[b].qs, 32);
    VKS_TILE_LOAD(1, bs.at(b), 64);
    _tile_dpbssd(2, 0, 1);
    VKS_TILE_LOAD(3, x[b + 1].qs, 32);
    VKS_TILE_LOAD(4, bs.at(b + 1), 64);
    _tile_dpbssd(5, 3, 4);
    VKS_TILE_LOAD(0, x[b + 2].qs, 32);
    VKS_TILE_LOAD(1, bs.at(b + 2), 64);
    _tile_dpbssd(6, 0, 1);
    VKS_TILE_LOAD(3, x[b + 3].qs, 32);
    VKS_TILE_LOAD(4, bs.at(b + 3), 64);
    _tile_dpbssd(7, 3, 4);
    VKS_TILE_STORE(2, c[0], 64);
    VKS_TILE_STORE(5, c[1], 64);
    VKS_TILE_STORE(6, c[2], 64);
    VKS_TILE_STORE(7, c[3], 64);
    for (size_t i = 0; i < 4; ++i) scale_add<M>(c[i], block_scales<K, kConverted>(g, dw, b + i), x[b + i].d, acc);
  }
  for (; b < n_blocks; ++b) {
    if (next != nullptr) prefetch_step(next + b * kBlock, kBlock);
    _tile_zero(2);
    VKS_TILE_LOAD(0, x[b].qs, 32);
    VKS_TILE_LOAD(1, bs.at(b), 64);
    _tile_dpbssd(2, 0, 1);
    VKS_TILE_STORE(2, c[0], 64);
    scale_add<M>(c[0], block_scales<K, kConverted>(g, dw, b), x[b].d, acc);
  }
#pragma GCC unroll 16
  for (int t = 0; t < M; ++t) _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride, acc[t]);
}

void prepare_tile(const uint8_t* act, size_t act_stride, size_t n_tokens, size_t n_blocks, uint8_t* out) {
  auto* blocks = reinterpret_cast<PreparedBlock*>(out);
  for (size_t b = 0; b < n_blocks; ++b) {
    PreparedBlock& o = blocks[b];
    for (size_t t = 0; t < kTileTokens; ++t) {
      if (t < n_tokens) {
        const ActQ8x32& x = reinterpret_cast<const ActQ8x32*>(act + t * act_stride)[b];
        _mm256_store_si256(reinterpret_cast<__m256i*>(o.qs[t]), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs)));
        o.d[t] = x.d;
      } else {
        _mm256_store_si256(reinterpret_cast<__m256i*>(o.qs[t]), _mm256_setzero_si256());
        o.d[t] = 0.0f;
      }
    }
  }
}

size_t prepared_bytes(size_t n_tokens, size_t n_blocks) {
  return (n_tokens + kTileTokens - 1) / kTileTokens * n_blocks * sizeof(PreparedBlock);
}

// Rows [0, n_rows) x n_tiles prepared tiles of M tokens (tile j's blocks at tiles + j * n_blocks)
// under one tile configuration.
template <class K, int M>
void tile_pass(const uint8_t* w, size_t w_stride, size_t n_rows, const PreparedBlock* tiles, size_t n_tiles,
               size_t n_blocks, float* y, size_t y_stride) {
  constexpr size_t kBlock = kGroupRows * K::kBytes;
  const TileConfig config = make_config(M);
  const TileScope scope(config);
  const bool converted = K::kDwords == 8 && n_tiles > 1;
  float* dw = converted ? reinterpret_cast<float*>(t_scales.reserve(n_blocks * 16 * sizeof(float))) : nullptr;
  for (size_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const uint8_t* g = w + r0 * w_stride;
    const BSource bsrc = group_b<K>(g, n_blocks);
    if (converted) {
      for (size_t b = 0; b < n_blocks; ++b) _mm512_store_ps(dw + 16 * b, scales(g + b * kBlock));
    }
    for (size_t j = 0; j < n_tiles; ++j) {
      // The first tile prefetches the next group (Q4_0 has just read this one to unpack it).
      const uint8_t* next = j == 0 && r0 + kGroupRows < n_rows ? g + kGroupRows * w_stride : nullptr;
      float* out = y + j * M * y_stride + r0;
      if (converted) {
        tile_group<K, M, true>(bsrc, g, dw, tiles + j * n_blocks, n_blocks, next, out, y_stride);
      } else {
        tile_group<K, M, false>(bsrc, g, dw, tiles + j * n_blocks, n_blocks, next, out, y_stride);
      }
    }
  }
}

// n_rows: a multiple of 16 (qmatmul checks that a packed matrix's work items are whole groups).
// Whole tiles of 16 tokens, and a last partial one of K::kTileFrom tokens or more configured to
// its token count, from the prepared copy (prepared: the item's first tile; qmatmul prepares
// those tiles, packed_kernel's thresholds); fewer tokens left take the vpdpbusd kernel.
template <class K>
void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
          const uint8_t* prepared, size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  const auto* tiles = reinterpret_cast<const PreparedBlock*>(prepared);
  const size_t whole = n_tokens / kTileTokens;
  if (whole > 0) tile_pass<K, kTileTokens>(w, w_stride, n_rows, tiles, whole, n_blocks, y, y_stride);
  const size_t t0 = whole * kTileTokens, rest = n_tokens - t0;
  if (rest == 0) return;
  if (rest >= K::kTileFrom) {
    util::with_count<kTileTokens - 1>(rest, [&](auto m) {
      tile_pass<K, m()>(w, w_stride, n_rows, tiles + whole * n_blocks, 1, n_blocks, y + t0 * y_stride, y_stride);
    });
  } else {
    K::few_tokens(w, w_stride, n_rows, act + t0 * act_stride, act_stride, rest, n_blocks, y + t0 * y_stride,
                  y_stride);
  }
}

template <class K>
PackedKernel packed_kernel() {
  // The tiles gemm reads: those of an item of kTileFrom tokens or more, a last partial one from
  // kTileFrom tokens. 128 tokens per work item: a prefill of 128 unpacks (Q4_0) and reads each
  // group once (against 64: the same or up to 1.1x at 128 and 256 tokens, vks_bench_cpu_kernels
  // --packed --packed-tokens 128 256, two alternating rounds).
  constexpr auto kFrom = static_cast<uint8_t>(std::min(K::kTileFrom, kTileTokens));
  return {{gemm<K>, prepare_tile, prepared_bytes, kFrom, kFrom}, 128};
}

#undef VKS_TILE_LOAD
#undef VKS_TILE_STORE

}  // namespace

void add_amx_packed_kernels(KernelTable& table) {
  table.packed[2] = packed_kernel<Q4_0Packed>();
  table.packed[8] = packed_kernel<Q8_0Packed>();
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
