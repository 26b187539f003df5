// The AMX level (AMX-TILE + AMX-INT8 over AVX-512 VNNI): Q4_0 and Q8_0 by tile multiplications,
// under the "block sums" convention (kernels.h): one int32 per block and output, where the lane
// convention needs four, so the float work per block is one multiply and one add per output (the
// lane convention's four of each bounded the 512-bit level's GEMM) and a tile instruction does the
// integer part.
//
// Weights are the tiles' A operand: 16 rows x the 32 bytes of one block, row-major as in the file
// (Q8_0's signed bytes straight from the weights; Q4_0's nibbles unpacked less 8, so the product
// includes the offset). The activations are B, in the VNNI layout B[k][4c + j] = x[4k + j] of the
// token in column c. C[r][c] is then S_b for row r, and the float step runs on 16 lanes at once:
// over tokens for 4 tokens or more (prefill), over rows for fewer (decode and the few tokens of a
// speculative step: Q8_0 with C one column, Q4_0 with vpdpbusd, see q4_0_few_tokens). Every path
// does, for each output, the same integer sums and float operations in the same order, so the bits
// never depend on the batch.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

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

// GCC's _tile_loadd does not say it reads memory, so a store into the scratch just before it could
// be moved past it; these do (and take the tile number as the intrinsics do, as a literal).
#define VKS_TILE_LOAD(tile, base, stride)                                                      \
  __asm__ volatile("{tileloadd\t(%0,%1,1), %%tmm" #tile "|tileloadd\t%%tmm" #tile ", [%0+%1*1]}" \
                   ::"r"(static_cast<const void*>(base)), "r"(static_cast<long>(stride))            \
                   : "memory")
#define VKS_TILE_STORE(tile, base, stride)                                                       \
  __asm__ volatile("{tilestored\t%%tmm" #tile ", (%0,%1,1)|tilestored\t[%0+%1*1], %%tmm" #tile "}" \
                   ::"r"(static_cast<void*>(base)), "r"(static_cast<long>(stride))                    \
                   : "memory")

constexpr size_t kGroupRows = 16;    // weight rows per tile (A's rows)
constexpr size_t kTileTokens = 16;   // tokens per tile (C's columns) in the GEMM path
constexpr size_t kUnpackedBlock = kGroupRows * 32;  // bytes of one block of a group, unpacked

struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

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

// Loads a configuration and releases the tiles when the kernel call ends (tile state is per thread,
// and a released state costs nothing to save on a context switch).
class TileScope {
 public:
  explicit TileScope(const TileConfig& config) { _tile_loadconfig(&config); }
  ~TileScope() { _tile_release(); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

// Both types' tiles hold signed bytes (tdpbssd): Q8_0's as stored, Q4_0's nibbles unpacked less
// 8 (-8..7), which puts its offset into the integer product instead of a correction per output.
// kTileFrom: the token count from which the GEMM path runs (a padded 16-token tile costs the same
// float work whatever the token count, and its group preparation reads memory in short runs);
// fewer run the paths over rows.
struct Q4_0Amx {
  static constexpr size_t kBytes = 18;
  static constexpr bool kNibbles = true;
  static constexpr size_t kTileFrom = 4;
};
struct Q8_0Amx {
  static constexpr size_t kBytes = 34;
  static constexpr bool kNibbles = false;
  static constexpr size_t kTileFrom = 4;
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

// Tokens [0, n_valid) of act (token t at act + t * act_stride) rearranged into n_blocks TokenBlocks:
// B[k][4c + j] = qs[4k + j] of token token_of(c). Per block, the 16 tokens' 8 dwords are transposed
// in registers (128-bit lane shuffles, then 4 x 4 transposes within lanes: nine gathers per block
// took 8% of a prefill); tokens past n_valid read as zero (masked loads).
void gather_tokens(const uint8_t* act, size_t act_stride, size_t n_valid, size_t n_blocks, TokenBlock* out) {
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
        const __mmask8 m0 = t < n_valid ? 0xFF : 0, m1 = t + 1 < n_valid ? 0xFF : 0;
        const __m256i lo = _mm256_maskz_loadu_epi32(m0, base + t * act_stride);
        const __m256i hi = _mm256_maskz_loadu_epi32(m1, base + (t + 1) * act_stride);
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
      for (size_t o = 0; o < 4 * kGroupStep; o += 64) _mm_prefetch(reinterpret_cast<const char*>(next + b * kGroupStep + o), _MM_HINT_T1);
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
      for (size_t o = 0; o < 2 * kGroupStep; o += 64) _mm_prefetch(reinterpret_cast<const char*>(next + b * kGroupStep + o), _MM_HINT_T1);
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
      for (size_t o = 0; o < kGroupStep; o += 64) _mm_prefetch(reinterpret_cast<const char*>(next + b * kGroupStep + o), _MM_HINT_T1);
    }
    _tile_zero(2);
    VKS_TILE_LOAD(0, a.at(b), a.stride);
    VKS_TILE_LOAD(1, x[b].b, 64);
    _tile_dpbssd(2, 0, 1);
    VKS_TILE_STORE(2, c[0], 64);
    scale_add_tokens(c[0], dw + 16 * b, x[b], acc);
  }
}

thread_local QmatmulScratch t_weights;  // a group's unpacked blocks, then its scales
thread_local QmatmulScratch t_tokens;   // the call's TokenBlocks

template <class K>
void gemm_tiles(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  const size_t n_tiles = (n_tokens + kTileTokens - 1) / kTileTokens;
  auto* x = reinterpret_cast<TokenBlock*>(t_tokens.reserve(n_tiles * n_blocks * sizeof(TokenBlock)));
  for (size_t j = 0; j < n_tiles; ++j) {
    gather_tokens(act + j * kTileTokens * act_stride, act_stride, std::min(kTileTokens, n_tokens - j * kTileTokens),
                  n_blocks, x + j * n_blocks);
  }
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

// ---- the path over rows: one token at a time, C one column of 16 rows ----

// Reading 16 rows side by side is 16 short streams, which the hardware prefetchers follow badly
// (kernels_avx512vnni.cpp): each block step prefetches its share of the next group, one
// contiguous range, so memory sees one sequential stream a group ahead.
inline void prefetch_step(const uint8_t* p, size_t bytes) {
  for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T0);
}

// acc[t] (16 rows) += float(S) * (d_w * d_x) for token t of one block, C already in tile 2 or 5.
inline void scale_add_rows(const int32_t* c, __m512 dw, const ActQ8x32& x, __m512& acc) {
  const __m512i s = _mm512_load_si512(c);
  const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(x.d));
  acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(s), scale));
}

// The tile sets of make_config by number (the tile instructions take literal tile numbers).
template <int kSet>
inline void load_a(const uint8_t* p, size_t stride) {
  if constexpr (kSet == 0) {
    VKS_TILE_LOAD(0, p, stride);
  } else {
    VKS_TILE_LOAD(3, p, stride);
  }
}

// Tokens [0, NT) of one block, against the block's A already in tile set kSet, one after another.
template <class K, int NT, int kSet>
inline void rows_block(const ActQ8x32* const* x, size_t b, __m512 dw, __m512* acc) {
  alignas(64) int32_t c[kGroupRows];
  for (int t = 0; t < NT; ++t) {
    if constexpr (kSet == 0) {
      _tile_zero(2);
      VKS_TILE_LOAD(1, x[t][b].qs, 4);
      _tile_dpbssd(2, 0, 1);
      VKS_TILE_STORE(2, c, 4);
    } else {
      _tile_zero(5);
      VKS_TILE_LOAD(4, x[t][b].qs, 4);
      _tile_dpbssd(5, 3, 4);
      VKS_TILE_STORE(5, c, 4);
    }
    scale_add_rows(c, dw, x[t][b], acc[t]);
  }
}

template <class K, int NT>
void gemm_rows(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
               size_t n_blocks, float* y, size_t y_stride) {
  const ActQ8x32* x[NT];
  for (int t = 0; t < NT; ++t) x[t] = reinterpret_cast<const ActQ8x32*>(act + static_cast<size_t>(t) * act_stride);
  uint8_t* unpacked = t_weights.reserve(n_blocks * kUnpackedBlock);
  const TileConfig config = make_config(1);
  const TileScope tiles(config);
  constexpr size_t kGroupStep = kGroupRows * K::kBytes;  // bytes of a group per block step
  for (size_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const size_t nr = std::min(kGroupRows, n_rows - r0);
    const uint8_t* g = w + r0 * w_stride;
    const uint8_t* ahead = r0 + 2 * kGroupRows <= n_rows ? g + kGroupRows * w_stride : nullptr;
    const GroupScales scales(w_stride, nr);
    const bool in_place = !K::kNibbles && nr == kGroupRows;
    // Where block b's A tile is read from.
    const auto a_at = [&](size_t b) -> const uint8_t* {
      if (ahead != nullptr) prefetch_step(ahead + b * kGroupStep, kGroupStep);
      if (in_place) return g + b * K::kBytes + 2;
      uint8_t* out = unpacked + (b % 2) * kUnpackedBlock;
      unpack_block<K>(g + b * K::kBytes, w_stride, nr, out);
      return out;
    };
    const size_t a_stride = in_place ? w_stride : 32;
    __m512 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
    // Two blocks at a time in the two tile sets: one set's zero, product and store wait for each
    // other (tile registers are not renamed), so one set alone ran at half Q8_0's memory speed.
    size_t b = 0;
    for (; b + 2 <= n_blocks; b += 2) {
      load_a<0>(a_at(b), a_stride);
      load_a<3>(a_at(b + 1), a_stride);
      rows_block<K, NT, 0>(x, b, scales.at(g + b * K::kBytes), acc);
      rows_block<K, NT, 3>(x, b + 1, scales.at(g + (b + 1) * K::kBytes), acc);
    }
    if (b < n_blocks) {
      load_a<0>(a_at(b), a_stride);
      rows_block<K, NT, 0>(x, b, scales.at(g + b * K::kBytes), acc);
    }
    for (int t = 0; t < NT; ++t) {
      alignas(64) float out[kGroupRows];
      _mm512_store_ps(out, acc[t]);
      for (size_t r = 0; r < nr; ++r) y[static_cast<size_t>(t) * y_stride + r0 + r] = out[r];
    }
  }
}

// ---- Q4_0's few tokens without tiles ----
// Unpacking a Q4_0 block for a tile costs more than the product of one token (the tile path over
// rows ran a matvec at 0.7x the avx512vnni level's), so a few Q4_0 tokens take vpdpbusd four rows
// per register as the avx512vnni level does, its four int32 per row then summed across four row
// groups by a transposed add: the block sums of 16 rows in one register, lane 4i + g holding row
// 4g + i. The same integers and the same float steps as the tiles: the same bits.

inline __m128i load16(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// Row i's 16 bytes at p + i * stride, in 128-bit lane i (a base and a stride: sixteen row pointers
// did not fit the registers).
inline __m512i rows16(const uint8_t* p, size_t stride) {
  __m512i v = _mm512_castsi128_si512(load16(p));
  v = _mm512_inserti32x4(v, load16(p + stride), 1);
  v = _mm512_inserti32x4(v, load16(p + 2 * stride), 2);
  return _mm512_inserti32x4(v, load16(p + 3 * stride), 3);
}

// Four row groups' lanes (row i of group g in 128-bit lane i) summed per row: row 4g + i's sum in
// int32 4i + g.
inline __m512i transposed_sums(__m512i l0, __m512i l1, __m512i l2, __m512i l3) {
  const __m512i a = _mm512_add_epi32(_mm512_unpacklo_epi32(l0, l1), _mm512_unpackhi_epi32(l0, l1));
  const __m512i b = _mm512_add_epi32(_mm512_unpacklo_epi32(l2, l3), _mm512_unpackhi_epi32(l2, l3));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}

thread_local QmatmulScratch t_lanes;  // a group's per-row-group int32 lanes, [token][block][row group]

// Rows [0, 16) of a group from g on (rows past the group's last repeat it in a copy: see below).
// Four rows at a time over every block, as the avx512vnni level reads them (one short run of four
// rows plus a prefetch of the next four: sixteen side by side ran a decode at 0.85x), the lanes of
// the first three row groups kept per block; the fourth pass sums each block's four row groups'
// lanes into 16 rows and runs the float step, while memory keeps streaming the next group (a
// separate pass after the reads left memory idle: 0.87x).
template <int NT>
void q4_0_group(const uint8_t* g, size_t w_stride, const uint8_t* ahead, const ActQ8x32* const* x, size_t n_blocks,
                __m512* acc) {
  constexpr size_t kBytes = Q4_0Amx::kBytes, kStep = 4 * kBytes;
  auto* lanes = reinterpret_cast<__m512i*>(t_lanes.reserve(static_cast<size_t>(NT) * n_blocks * 3 * sizeof(__m512i)));
  const __m512i m4 = _mm512_set1_epi8(0xF);
  const auto block_lanes = [&](const uint8_t* p, const ActQ8x32& a) {
    const __m512i v = rows16(p, w_stride);
    const __m512i xlo = _mm512_broadcast_i32x4(load16(a.qs)), xhi = _mm512_broadcast_i32x4(load16(a.qs + 16));
    const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xlo), hi, xhi);
  };
  for (size_t q = 0; q < 3; ++q) {
    const uint8_t* p = g + 4 * q * w_stride + 2;
    const uint8_t* next = g + 4 * (q + 1) * w_stride;
    for (size_t b = 0; b < n_blocks; ++b) {
      prefetch_step(next + b * kStep, kStep);
      for (int t = 0; t < NT; ++t) lanes[(static_cast<size_t>(t) * n_blocks + b) * 3 + q] = block_lanes(p + b * kBytes, x[t][b]);
    }
  }
  alignas(64) int32_t index[kGroupRows];
  for (size_t r = 0; r < kGroupRows; ++r) index[4 * (r % 4) + r / 4] = static_cast<int32_t>(r * w_stride);
  const __m512i scale_index = _mm512_load_si512(index);
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const uint8_t* p = g + 12 * w_stride + 2;
  for (size_t b = 0; b < n_blocks; ++b) {
    if (ahead != nullptr) prefetch_step(ahead + b * kStep, kStep);
    const __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(scale_index, g + b * kBytes, 1)));
    for (int t = 0; t < NT; ++t) {
      const ActQ8x32& a = x[t][b];
      const __m512i* l = lanes + (static_cast<size_t>(t) * n_blocks + b) * 3;
      const __m512i l3 = block_lanes(p + b * kBytes, a);
      const __m512i sums = _mm512_add_epi32(transposed_sums(l[0], l[1], l[2], l3), _mm512_set1_epi32(a.neg_c8[0]));
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(a.d));
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_cvtepi32_ps(sums), scale));
    }
  }
}

thread_local QmatmulScratch t_tail_rows;  // a last group of fewer than 16 rows, padded with copies of its last

template <int NT>
void q4_0_few_tokens(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                     size_t n_blocks, float* y, size_t y_stride) {
  const ActQ8x32* x[NT];
  for (int t = 0; t < NT; ++t) x[t] = reinterpret_cast<const ActQ8x32*>(act + static_cast<size_t>(t) * act_stride);
  const size_t row_bytes = n_blocks * Q4_0Amx::kBytes;
  for (size_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const size_t nr = std::min(kGroupRows, n_rows - r0);
    const uint8_t* g = w + r0 * w_stride;
    size_t stride = w_stride;
    if (nr < kGroupRows) {
      uint8_t* copy = t_tail_rows.reserve(kGroupRows * row_bytes);
      for (size_t r = 0; r < kGroupRows; ++r) std::memcpy(copy + r * row_bytes, g + std::min(r, nr - 1) * w_stride, row_bytes);
      g = copy;
      stride = row_bytes;
    }
    const uint8_t* ahead = r0 + 2 * kGroupRows <= n_rows ? w + (r0 + kGroupRows) * w_stride : nullptr;
    __m512 acc[NT];
    q4_0_group<NT>(g, stride, ahead, x, n_blocks, acc);
    for (int t = 0; t < NT; ++t) {
      alignas(64) float out[kGroupRows];
      _mm512_store_ps(out, acc[t]);
      for (size_t r = 0; r < nr; ++r) y[static_cast<size_t>(t) * y_stride + r0 + r] = out[4 * (r % 4) + r / 4];
    }
  }
}

// n_tokens (1..NT) Q4_0 tokens by q4_0_few_tokens<n_tokens>.
template <int NT>
void q4_0_up_to(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  if constexpr (NT > 0) {
    if (n_tokens == NT) {
      q4_0_few_tokens<NT>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride);
    } else {
      q4_0_up_to<NT - 1>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
    }
  }
}

template <class K>
void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, size_t n_tokens,
          size_t n_blocks, float* y, size_t y_stride) {
  if (n_tokens >= K::kTileFrom) {
    gemm_tiles<K>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
    return;
  }
  if constexpr (K::kNibbles) {
    q4_0_up_to<Q4_0Amx::kTileFrom - 1>(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
  } else {
    switch (n_tokens) {
      case 3: gemm_rows<K, 3>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride); break;
      case 2: gemm_rows<K, 2>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride); break;
      case 1: gemm_rows<K, 1>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride); break;
      default: break;
    }
  }
}

#undef VKS_TILE_LOAD
#undef VKS_TILE_STORE

}  // namespace

void add_amx_kernels(KernelTable& table) {
  table.gemm[2] = gemm<Q4_0Amx>;
  table.gemm[8] = gemm<Q8_0Amx>;
  // 128 tokens per work item: a prefill of 128 unpacks each row group once (and reads it from
  // memory once) instead of twice.
  table.tokens_per_item[2] = table.tokens_per_item[8] = 128;
  add_amx_kquant_kernels(table);
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
