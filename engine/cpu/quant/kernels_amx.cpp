// The AMX level (AMX-TILE + AMX-INT8 over AVX-512 VNNI): Q4_0 and Q8_0 by tile multiplications,
// under the "block sums" convention (kernels.h): one int32 per block and output, where the lane
// convention needs four, so the float work per block is one multiply and one add per output (the
// lane convention's four of each bounded the 512-bit level's GEMM) and a tile instruction does the
// integer part.
//
// Weights are the tiles' A operand: 16 rows x the 32 bytes of one block, row-major as in the file
// (Q8_0's signed bytes straight from the weights; Q4_0's nibbles unpacked less 8, so the product
// includes the offset). The activations are B, in the VNNI layout B[k][4c + j] = x[4k + j] of the
// token in column c. C[r][c] is then S_b for row r, and the float step runs on 16 lanes at once,
// over tokens. Fewer tokens than a type's kTileFrom (decode, a few sequences' batched decode, a
// speculative step, and a batch's last tokens past its whole tiles) take the avx512vnni level's
// vpdpbusd kernels instead (kernels_avx512vnni_block_sums.cpp), the float step over rows. Every
// path does, for each output, the same integer sums and float operations in the same order, so the
// bits never depend on the batch.
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

constexpr size_t kGroupRows = 16;    // weight rows per tile (A's rows)
constexpr size_t kTileTokens = kPreparedTileTokens;  // tokens per tile (C's columns) in the GEMM path
constexpr size_t kUnpackedBlock = kGroupRows * 32;  // bytes of one block of a group, unpacked

// Tiles 0 and 3: A (16 rows x 32 bytes); 1 and 4: B (8 rows of `tokens` x 4 bytes); 2 and 5: C
// (16 rows of `tokens` int32). Two sets, so that two blocks are in flight; 6 and 7 are two more
// C tiles (the GEMM path: four blocks in flight, the second two reusing A and B, which their
// products release before the first two's C tiles are stored).
TileConfig make_config(size_t tokens) {
  TileConfig c;
  for (int set : {0, 3}) {
    c.rows[set] = kGroupRows;
    c.colsb[set] = 32;
    c.rows[set + 1] = 8;
    c.colsb[set + 1] = static_cast<uint16_t>(4 * tokens);
    c.rows[set + 2] = kGroupRows;
    c.colsb[set + 2] = static_cast<uint16_t>(4 * tokens);
  }
  for (int extra : {6, 7}) {
    c.rows[extra] = kGroupRows;
    c.colsb[extra] = static_cast<uint16_t>(4 * tokens);
  }
  return c;
}

// Both types' tiles hold signed bytes (tdpbssd): Q8_0's as stored, Q4_0's nibbles unpacked less
// 8 (-8..7), which puts its offset into the integer product instead of a correction per output.
// kTileFrom: the fewest tokens a tile of 16 runs for (a padded tile costs the same whatever its
// token count; below this the few-token path costs less: vks_bench_cpu_kernels --sweep 16, where
// the two crossed; Q8_0's tile reads its weights in place, Q4_0's unpacks them first). few_tokens:
// the avx512vnni level's kernel for the tokens below a tile.
struct Q4_0Amx {
  static constexpr size_t kBytes = 18;
  static constexpr bool kNibbles = true;
  static constexpr size_t kTileFrom = 13;
  static constexpr GemmFn few_tokens = block_sums_q4_0;
};
struct Q8_0Amx {
  static constexpr size_t kBytes = 34;
  static constexpr bool kNibbles = false;
  static constexpr size_t kTileFrom = 10;
  static constexpr GemmFn few_tokens = block_sums_q8_0;
};

// ---- a group of 16 weight rows ----

// The block scales of rows [0, n_valid) of a group as floats, in all 16 lanes (zero past n_valid):
// one gather of the halves at each row's block.
struct GroupScales {
  __m512i index;
  __mmask16 valid;
  GroupScales(size_t w_stride, size_t n_valid)
      : index(_mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                 _mm512_set1_epi32(static_cast<int>(w_stride)))),
        valid(static_cast<__mmask16>((1u << n_valid) - 1)) {}
  __m512 at(const uint8_t* block) const {
    const __m512i h = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, index, block, 1);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
  }
};

// One block of rows [0, n_valid) as A: 16 rows x 32 bytes at out (rows past n_valid zero). Q4_0:
// elements 0..15 the low nibbles, 16..31 the high ones, less 8.
template <class K>
inline void unpack_block(const uint8_t* block, size_t w_stride, size_t n_valid, uint8_t* out) {
  const __m256i m4 = _mm256_set1_epi8(0xF), eight = _mm256_set1_epi8(8);
  for (size_t r = 0; r < n_valid; ++r) {
    const uint8_t* q = block + r * w_stride + 2;
    if constexpr (K::kNibbles) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
      const __m256i both = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * r), _mm256_sub_epi8(_mm256_and_si256(both, m4), eight));
    } else {
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * r),
                         _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)));
    }
  }
  for (size_t r = n_valid; r < kGroupRows; ++r) _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * r), _mm256_setzero_si256());
}

// Where a group's A tiles come from: Q8_0 with 16 real rows reads the weights in place; otherwise
// the blocks unpacked (or padded) into a scratch of kUnpackedBlock bytes per block.
struct ASource {
  const uint8_t* base;
  size_t step;    // bytes from one block's tile to the next
  size_t stride;  // bytes from one row of a tile to the next
  const uint8_t* at(size_t b) const { return base + b * step; }
};

// ---- the GEMM path: 16 rows x 16 tokens per tile, the float step over tokens ----

// One block of up to 16 tokens: B in the VNNI layout and each token's d (zero for tokens past the
// last, whose outputs are not stored). Column c holds token token_of(c) (the order the transpose
// below produces; a column's outputs are stored to that token).
struct alignas(64) TokenBlock {
  int8_t b[8][64];
  float d[16];
};
static_assert(sizeof(TokenBlock) == 576);

constexpr size_t token_of(size_t c) { return 4 * (c % 4) + c / 4; }

inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// Tokens [0, n_valid) of act (token t at act + t * act_stride) rearranged into n_blocks TokenBlocks:
// B[k][4c + j] = qs[4k + j] of token token_of(c). Per block, the 16 tokens' 8 dwords are transposed
// in registers (128-bit lane shuffles, then 4 x 4 transposes within lanes: nine gathers per block
// took 8% of a prefill); tokens past n_valid are zero registers, not loads. (Masked loads with an
// empty mask cost a microcode assist where the skipped address lies past the activations: a tile
// of 5 tokens took 1.45x the time of a full one.) qmatmul runs it once per call and tile
// (PreparedKernel): once per work item, it took 7% of a 16-sequence decode step.
void gather_tokens(const uint8_t* act, size_t act_stride, size_t n_valid, size_t n_blocks, uint8_t* prepared) {
  auto* out = reinterpret_cast<TokenBlock*>(prepared);
  alignas(64) int32_t d_index[16];
  __mmask16 d_valid = 0;
  for (size_t c = 0; c < 16; ++c) {
    d_index[c] = static_cast<int32_t>(token_of(c) * act_stride + offsetof(ActQ8x32, d));
    if (token_of(c) < n_valid) d_valid = static_cast<__mmask16>(d_valid | (1u << c));
  }
  const __m512i index = _mm512_load_si512(d_index);
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* base = act + b * sizeof(ActQ8x32);
    // u[q][h]: tokens 4q..4q+3, dwords 4h..4h+3 (token 4q + i in 128-bit lane i).
    __m512i u[4][2];
    for (size_t q = 0; q < 4; ++q) {
      __m512i z[2];
      for (size_t pair = 0; pair < 2; ++pair) {
        const size_t t = 4 * q + 2 * pair;
        const __m256i lo = t < n_valid ? load32(base + t * act_stride) : _mm256_setzero_si256();
        const __m256i hi = t + 1 < n_valid ? load32(base + (t + 1) * act_stride) : _mm256_setzero_si256();
        z[pair] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
      }
      u[q][0] = _mm512_shuffle_i32x4(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0));
      u[q][1] = _mm512_shuffle_i32x4(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1));
    }
    TokenBlock& o = out[b];
    for (size_t h = 0; h < 2; ++h) {
      const __m512i t0 = _mm512_unpacklo_epi32(u[0][h], u[1][h]), t1 = _mm512_unpackhi_epi32(u[0][h], u[1][h]);
      const __m512i t2 = _mm512_unpacklo_epi32(u[2][h], u[3][h]), t3 = _mm512_unpackhi_epi32(u[2][h], u[3][h]);
      _mm512_store_si512(o.b[4 * h + 0], _mm512_unpacklo_epi64(t0, t2));
      _mm512_store_si512(o.b[4 * h + 1], _mm512_unpackhi_epi64(t0, t2));
      _mm512_store_si512(o.b[4 * h + 2], _mm512_unpacklo_epi64(t1, t3));
      _mm512_store_si512(o.b[4 * h + 3], _mm512_unpackhi_epi64(t1, t3));
    }
    _mm512_store_ps(o.d, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), d_valid, index, base, 1));
  }
}

// acc[r] (16 tokens) += float(S) * (d_w[r] * d_x) for the 16 rows of one block's C.
inline void scale_add_tokens(const int32_t* c, const float* dw, const TokenBlock& x, __m512* acc) {
  const __m512 dx = _mm512_load_ps(x.d);
  for (size_t r = 0; r < kGroupRows; ++r) {
    const __m512i s = _mm512_load_si512(c + 16 * r);
    const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(dw[r]), dx);
    acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(_mm512_cvtepi32_ps(s), scale));
  }
}

// One group of 16 rows times one tile of 16 tokens, every block; acc[r] holds row r's 16 tokens.
// next: where the next group's bytes start (null for none), prefetched into L2 a share per block
// step, so that the next group's scales and unpacking read it from cache.
template <class K>
void tile_tokens(const ASource& a, const float* dw, const TokenBlock* x, size_t n_blocks, const uint8_t* next,
                 __m512* acc) {
  constexpr size_t kGroupStep = kGroupRows * K::kBytes;
  alignas(64) int32_t c[4][kGroupRows * kTileTokens];
  for (size_t r = 0; r < kGroupRows; ++r) acc[r] = _mm512_setzero_ps();
  size_t b = 0;
  for (; b + 4 <= n_blocks; b += 4) {
    if (next != nullptr) {
      util::prefetch_range<util::PrefetchTo::kL2>(next + b * kGroupStep, 4 * kGroupStep);
    }
    _tile_zero(2);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
    VKS_TILE_LOAD(0, a.at(b), a.stride);
    VKS_TILE_LOAD(1, x[b].b, 64);
    _tile_dpbssd(2, 0, 1);
    VKS_TILE_LOAD(3, a.at(b + 1), a.stride);
    VKS_TILE_LOAD(4, x[b + 1].b, 64);
    _tile_dpbssd(5, 3, 4);
    VKS_TILE_LOAD(0, a.at(b + 2), a.stride);
    VKS_TILE_LOAD(1, x[b + 2].b, 64);
    _tile_dpbssd(6, 0, 1);
    VKS_TILE_LOAD(3, a.at(b + 3), a.stride);
    VKS_TILE_LOAD(4, x[b + 3].b, 64);
    _tile_dpbssd(7, 3, 4);
    VKS_TILE_STORE(2, c[0], 64);
    VKS_TILE_STORE(5, c[1], 64);
    VKS_TILE_STORE(6, c[2], 64);
    VKS_TILE_STORE(7, c[3], 64);
    for (size_t i = 0; i < 4; ++i) scale_add_tokens(c[i], dw + 16 * (b + i), x[b + i], acc);
  }
  for (; b + 2 <= n_blocks; b += 2) {
    if (next != nullptr) {
      util::prefetch_range<util::PrefetchTo::kL2>(next + b * kGroupStep, 2 * kGroupStep);
    }
    _tile_zero(2);
    _tile_zero(5);
    VKS_TILE_LOAD(0, a.at(b), a.stride);
    VKS_TILE_LOAD(1, x[b].b, 64);
    VKS_TILE_LOAD(3, a.at(b + 1), a.stride);
    VKS_TILE_LOAD(4, x[b + 1].b, 64);
    _tile_dpbssd(2, 0, 1);
    _tile_dpbssd(5, 3, 4);
    VKS_TILE_STORE(2, c[0], 64);
    VKS_TILE_STORE(5, c[1], 64);
    scale_add_tokens(c[0], dw + 16 * b, x[b], acc);
    scale_add_tokens(c[1], dw + 16 * (b + 1), x[b + 1], acc);
  }
  if (b < n_blocks) {
    if (next != nullptr) {
      util::prefetch_range<util::PrefetchTo::kL2>(next + b * kGroupStep, kGroupStep);
    }
    _tile_zero(2);
    VKS_TILE_LOAD(0, a.at(b), a.stride);
    VKS_TILE_LOAD(1, x[b].b, 64);
    _tile_dpbssd(2, 0, 1);
    VKS_TILE_STORE(2, c[0], 64);
    scale_add_tokens(c[0], dw + 16 * b, x[b], acc);
  }
}

// The bytes of n_tokens tokens' tiles: n_blocks TokenBlocks per tile.
size_t token_block_bytes(size_t n_tokens, size_t n_blocks) {
  return (n_tokens + kTileTokens - 1) / kTileTokens * n_blocks * sizeof(TokenBlock);
}

thread_local QmatmulScratch t_weights;  // a group's unpacked blocks, then its scales

// x: the tiles' TokenBlocks, n_blocks per tile of 16 tokens (gather_tokens').
template <class K>
void gemm_tiles(const uint8_t* w, size_t w_stride, size_t n_rows, const TokenBlock* x, size_t n_tokens,
                size_t n_blocks, float* y, size_t y_stride) {
  const size_t n_tiles = (n_tokens + kTileTokens - 1) / kTileTokens;
  uint8_t* unpacked = t_weights.reserve(n_blocks * (kUnpackedBlock + 64));
  auto* dw = reinterpret_cast<float*>(unpacked + n_blocks * kUnpackedBlock);
  const TileConfig config = make_config(kTileTokens);
  const TileScope tiles(config);
  for (size_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const size_t nr = std::min(kGroupRows, n_rows - r0);
    const uint8_t* g = w + r0 * w_stride;
    const GroupScales scales(w_stride, nr);
    for (size_t b = 0; b < n_blocks; ++b) _mm512_store_ps(dw + 16 * b, scales.at(g + b * K::kBytes));
    ASource a{g + 2, K::kBytes, w_stride};
    if (K::kNibbles || nr < kGroupRows) {
      for (size_t b = 0; b < n_blocks; ++b) unpack_block<K>(g + b * K::kBytes, w_stride, nr, unpacked + b * kUnpackedBlock);
      a = ASource{unpacked, kUnpackedBlock, 32};
    }
    for (size_t j = 0; j < n_tiles; ++j) {
      __m512 acc[kGroupRows];
      const bool prefetch = j == 0 && r0 + kGroupRows < n_rows;
      tile_tokens<K>(a, dw, x + j * n_blocks, n_blocks, prefetch ? g + kGroupRows * w_stride : nullptr, acc);
      alignas(64) float out[kGroupRows][kTileTokens];
      for (size_t r = 0; r < kGroupRows; ++r) _mm512_store_ps(out[r], acc[r]);
      // Column c (token token_of(c)) of the 16 rows, gathered and stored as one run of y.
      const size_t t0 = j * kTileTokens, nt = std::min(kTileTokens, n_tokens - t0);
      const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                              _mm512_set1_epi32(kTileTokens));
      const auto row_mask = static_cast<__mmask16>((1u << nr) - 1);
      for (size_t c = 0; c < kTileTokens; ++c) {
        if (token_of(c) >= nt) continue;
        const __m512 column = _mm512_i32gather_ps(rows, &out[0][c], 4);
        _mm512_mask_storeu_ps(y + (t0 + token_of(c)) * y_stride + r0, row_mask, column);
      }
    }
  }
}

// Whole tiles of 16 tokens, and a last partial one where it has K::kTileFrom tokens or more (the
// tiles qmatmul prepares: tiled_kernel's thresholds); the tokens left (fewer) by the few-token
// path, rather than a padded tile: 17 tokens cost a tile and a matvec, not two tiles.
template <class K>
void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
          const uint8_t* prepared, size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  const size_t rest = n_tokens % kTileTokens;
  const size_t tiled = rest >= K::kTileFrom ? n_tokens : n_tokens - rest;
  if (tiled > 0) {
    gemm_tiles<K>(w, w_stride, n_rows, reinterpret_cast<const TokenBlock*>(prepared), tiled, n_blocks, y, y_stride);
  }
  if (tiled < n_tokens) {
    K::few_tokens(w, w_stride, n_rows, act + tiled * act_stride, act_stride, n_tokens - tiled, n_blocks,
                  y + tiled * y_stride, y_stride);
  }
}

#undef VKS_TILE_LOAD
#undef VKS_TILE_STORE

template <class K>
PreparedKernel tiled_kernel() {
  return {gemm<K>, gather_tokens, token_block_bytes, K::kTileFrom, K::kTileFrom};
}

}  // namespace

void add_amx_kernels(KernelTable& table) {
  table.gemm[2] = table.gemm[8] = nullptr;  // the avx512vnni level's: these run prepared instead
  table.prepared[2] = tiled_kernel<Q4_0Amx>();
  table.prepared[8] = tiled_kernel<Q8_0Amx>();
  // 128 tokens per work item: a prefill of 128 unpacks each row group once (and reads it from
  // memory once) instead of twice.
  constexpr uint16_t kItemTokens = 128;
  static_assert(kItemTokens % kTileTokens == 0, "a work item's tiles are whole tiles of the call's");
  table.tokens_per_item[2] = table.tokens_per_item[8] = kItemTokens;
  add_amx_kquant_kernels(table);
  add_amx_packed_kernels(table);
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
