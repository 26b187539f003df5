// The AMX level's Q4_K, under the "K-block sums" convention (kernels.h): per 256-element block one
// exact int32 S = sum_j sc_j * P_j for the scaled products and one M = sum_j m_j * (sub-block sum)
// for the mins, then one float accumulator per output.
//
// Tiles (kTileFrom tokens or more): the tokens are A, 16 tokens' signed activation bytes read in
// place; the weights are B in the VNNI layout, unsigned bytes with each sub-block's 6-bit scale
// folded in. A 4-bit nibble times a 4-bit factor fits a byte, so a row's block becomes two byte
// planes, q * (sc & 15) and q * (sc >> 4), and S = C_lo + 16 * C_hi, exact: two tile products per
// 64-byte chunk (four chunks per block) give S for 16 tokens x 16 rows with no integer multiply per
// output. M comes from the tokens' 16-element sums by vpdpwssd (an int16 pair of mins per row
// against a pair of sub-block sums per token). Fewer tokens run four rows per register with
// vpdpbusd (the avx512vnni level's way of reading Q4_K), summed to the same S and M: the same
// integers, the same float steps, the same bits. The same matrix packed in groups of 16 rows
// (packed_rows.h, the CPU runner's copy) takes the same tiles, its groups read by plain loads in
// place of gathers, and fewer tokens sixteen rows per register (below): the same bits again.
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

#include "engine/cpu/quant/amx_tiles.inc"
#include "engine/cpu/quant/kquant_rows16.inc"

constexpr size_t kBytes = 144;      // a Q4_K block: d, dmin, 12 scale bytes, 128 bytes of nibbles
constexpr size_t kGroupRows = 16;   // weight rows per tile (B's and C's columns)
constexpr size_t kTileTokens = kPreparedTileTokens;  // tokens per tile (A's and C's rows)
// From this many tokens the tiles run: below it, preparing a row group's B costs more than the
// vector products of its few tokens (vks_bench_cpu_kernels --sweep).
constexpr int kTileFrom = 13;

// ---- a group of 16 weight rows as B, prepared once per call for every token tile ----

// One block of the group in the VNNI layout, chunk k (elements 64k..64k+63) by chunk:
// lo[k][i][4r + e] = q * (sc & 15) and hi[k][i][4r + e] = q * (sc >> 4) for element 64k + 4i + e
// of row r (nibble q, its sub-block's scale sc); each row's mins as int16 pairs
// (min_pairs[i][r] = m_2i | m_2i+1 << 16, for vpdpwssd) and d and dmin (all zero past the last row).
struct alignas(64) GroupBlock {
  uint8_t lo[4][16][64];
  uint8_t hi[4][16][64];
  int32_t min_pairs[4][kGroupRows];
  float d[kGroupRows];
  float dmin[kGroupRows];
};
static_assert(sizeof(GroupBlock) % 64 == 0);

// Bytes q * s for unsigned bytes q and, per int32, a multiplier s (< 16) in bytes 0 and 2 (q * s
// <= 225 fits a byte): vpmaddubsw gives the even bytes' products as int16, and the odd bytes'
// after a shift.
inline __m512i times_scale(__m512i q, __m512i q_odd, __m512i pattern) {
  const __m512i even = _mm512_maddubs_epi16(q, pattern);
  const __m512i odd = _mm512_maddubs_epi16(q_odd, pattern);
  return _mm512_or_si512(even, _mm512_slli_epi16(odd, 8));
}

// Where a group's dwords lie: dword `off / 4` of every row of block b, 16 rows in the 16 int32 of
// one register. GGUF rows (w_stride apart, n_valid of them, the rest zero): one gather.
struct GgufGroup {
  const uint8_t* g;
  __m512i index;
  __mmask16 valid;
  GgufGroup(const uint8_t* rows, size_t w_stride, size_t n_valid)
      : g(rows),
        index(_mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                 _mm512_set1_epi32(static_cast<int>(w_stride)))),
        valid(static_cast<__mmask16>((1u << n_valid) - 1)) {}
  __m512i dword(size_t b, size_t off) const {
    return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, index, g + b * kBytes + off, 1);
  }
};
// Packed rows (WeightLayout::kRows16, packed_rows.h): the 16 rows' dword side by side, one load.
constexpr size_t kPackedBlock = kGroupRows * kBytes;
struct PackedGroup {
  const uint8_t* g;
  __m512i dword(size_t b, size_t off) const { return _mm512_loadu_si512(g + b * kPackedBlock + 16 * off); }
};

// The group's blocks, every one, in the tiles' layout.
template <class Group>
void prepare_group(const Group& rows, size_t n_blocks, GroupBlock* out) {
  const __m512i low4 = _mm512_set1_epi32(15), m4 = _mm512_set1_epi8(0xF);
  for (size_t b = 0; b < n_blocks; ++b) {
    GroupBlock& o = out[b];
    const __m512i head = rows.dword(b, 0);
    _mm512_store_ps(o.d, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head)));
    _mm512_store_ps(o.dmin, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(head, 16))));
    const ScalesMins sm = scales_mins16(rows.dword(b, 4), rows.dword(b, 8), rows.dword(b, 12));
    __m512i lo_pattern[8], hi_pattern[8];
    for (int j = 0; j < 8; ++j) {
      lo_pattern[j] = twice(_mm512_and_si512(sm.sc[j], low4));
      hi_pattern[j] = twice(_mm512_srli_epi32(sm.sc[j], 4));
    }
    for (int i = 0; i < 4; ++i) _mm512_store_si512(o.min_pairs[i], _mm512_or_si512(sm.m[2 * i], _mm512_slli_epi32(sm.m[2 * i + 1], 16)));
    for (int k = 0; k < 4; ++k) {
      // Chunk k: qs bytes 32k..32k+31, sub-block 2k the low nibbles (B rows 0..7), 2k + 1 the high
      // ones (rows 8..15).
      for (int i = 0; i < 8; ++i) {
        const __m512i raw = rows.dword(b, 16 + 32 * k + 4 * i);
        const __m512i q_lo = _mm512_and_si512(raw, m4), q_hi = _mm512_and_si512(_mm512_srli_epi32(raw, 4), m4);
        const __m512i q_lo_odd = _mm512_srli_epi16(q_lo, 8), q_hi_odd = _mm512_srli_epi16(q_hi, 8);
        _mm512_store_si512(o.lo[k][i], times_scale(q_lo, q_lo_odd, lo_pattern[2 * k]));
        _mm512_store_si512(o.hi[k][i], times_scale(q_lo, q_lo_odd, hi_pattern[2 * k]));
        _mm512_store_si512(o.lo[k][8 + i], times_scale(q_hi, q_hi_odd, lo_pattern[2 * k + 1]));
        _mm512_store_si512(o.hi[k][8 + i], times_scale(q_hi, q_hi_odd, hi_pattern[2 * k + 1]));
      }
    }
  }
}

// ---- the tokens: A straight from the activations, their sums prepared once per call ----

// Each token's sub-block sums as int16 pairs (bs_2i | bs_2i+1 << 16, bs_j the sum of sub-block j's
// 32 activations), per token and block.
struct alignas(16) SumPairs {
  int32_t v[4];
};

// A tile's prepared part (qmatmul runs prepare_tile once per call and tile: PreparedKernel): its
// tokens' SumPairs, [token][block], and for a last tile of fewer than 16 tokens a copy of their
// activations padded with zero tokens (a tile load reads all 16 rows), n_blocks ActQ8x256 apart.
size_t pairs_bytes(size_t n_blocks) { return kTileTokens * n_blocks * sizeof(SumPairs); }
size_t prepared_bytes(size_t n_tokens, size_t n_blocks) {
  const size_t tail_copy = n_tokens % kTileTokens != 0 ? kTileTokens * n_blocks * sizeof(ActQ8x256) : 0;
  return (n_tokens + kTileTokens - 1) / kTileTokens * pairs_bytes(n_blocks) + tail_copy;
}

void sum_pairs(const uint8_t* act, size_t act_stride, size_t n_tokens, size_t n_blocks, SumPairs* out) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (size_t t = 0; t < n_tokens; ++t) {
    const auto* a = reinterpret_cast<const ActQ8x256*>(act + t * act_stride);
    for (size_t b = 0; b < n_blocks; ++b) {
      const __m256i bs = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b].bsums)), ones);
      // |bs_j| <= 32 * 127: the int32 pack to int16 without saturating.
      const __m128i pairs = _mm_packs_epi32(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
      _mm_store_si128(reinterpret_cast<__m128i*>(out[t * n_blocks + b].v), pairs);
    }
  }
}

void prepare_tile(const uint8_t* act, size_t act_stride, size_t n_tokens, size_t n_blocks, uint8_t* out) {
  sum_pairs(act, act_stride, n_tokens, n_blocks, reinterpret_cast<SumPairs*>(out));
  if (n_tokens == kTileTokens) return;
  uint8_t* copy = out + pairs_bytes(n_blocks);
  const size_t row_bytes = n_blocks * sizeof(ActQ8x256);
  for (size_t t = 0; t < n_tokens; ++t) std::memcpy(copy + t * row_bytes, act + t * act_stride, row_bytes);
  std::memset(copy + n_tokens * row_bytes, 0, (kTileTokens - n_tokens) * row_bytes);
}

// ---- the tiles: 16 tokens x 16 rows, two row groups per pass ----

// Every tile 16 rows x 64 bytes: 0-3 C (two row groups' C_lo and C_hi), 4 A (a token tile's
// activations), 5-7 B (the groups' lo and hi chunks, three registers for four so that a load waits
// for one product only).
TileConfig make_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.rows[t] = 16;
    c.colsb[t] = 64;
  }
  return c;
}

// The convention's step for one block and n tokens (C_lo and C_hi stored at lo and hi, token t's
// 16 rows in row t): S = C_lo + 16 C_hi, M from the sums, acc = (acc + float(S) * (d_w * d_x)) -
// float(M) * (dmin_w * d_x), on the 16 rows at once.
inline void finish_block(const int32_t* lo, const int32_t* hi, const GroupBlock& w, const uint8_t* act,
                         size_t act_stride, const SumPairs* pairs, size_t pair_stride, size_t n, float* acc) {
  const __m512 dw = _mm512_load_ps(w.d), dmin = _mm512_load_ps(w.dmin);
  const __m512i m0 = _mm512_load_si512(w.min_pairs[0]), m1 = _mm512_load_si512(w.min_pairs[1]);
  const __m512i m2 = _mm512_load_si512(w.min_pairs[2]), m3 = _mm512_load_si512(w.min_pairs[3]);
  for (size_t t = 0; t < n; ++t) {
    const __m512 dx = _mm512_set1_ps(reinterpret_cast<const ActQ8x256*>(act + t * act_stride)->d);
    const int32_t* sp = pairs[t * pair_stride].v;
    const __m512i s = _mm512_add_epi32(_mm512_load_si512(lo + 16 * t), _mm512_slli_epi32(_mm512_load_si512(hi + 16 * t), 4));
    __m512i m = _mm512_dpwssd_epi32(_mm512_setzero_si512(), m0, _mm512_set1_epi32(sp[0]));
    m = _mm512_dpwssd_epi32(m, m1, _mm512_set1_epi32(sp[1]));
    m = _mm512_dpwssd_epi32(m, m2, _mm512_set1_epi32(sp[2]));
    m = _mm512_dpwssd_epi32(m, m3, _mm512_set1_epi32(sp[3]));
    const __m512 sum = _mm512_mul_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, dx));
    const __m512 mins = _mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(dmin, dx));
    _mm512_store_ps(acc + 16 * t, _mm512_sub_ps(_mm512_add_ps(_mm512_load_ps(acc + 16 * t), sum), mins));
  }
}

thread_local QmatmulScratch t_weights;  // a group's GroupBlocks
thread_local QmatmulScratch t_acc;      // the accumulators of a group: 16 floats per token

// prepared: the tiles' parts (prepare_tile's), tile 0 first. kPacked: w in WeightLayout::kRows16
// (n_rows a multiple of 16).
template <bool kPacked>
void gemm_tiles(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                const uint8_t* prepared, size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  const size_t n_tiles = (n_tokens + kTileTokens - 1) / kTileTokens;
  const auto* pairs = reinterpret_cast<const SumPairs*>(prepared);
  // Token tile j's A rows are its tokens' activations in place, act_stride apart; a last tile of
  // fewer than 16 tokens reads its padded copy.
  const size_t tail_tokens = n_tokens % kTileTokens, row_bytes = n_blocks * sizeof(ActQ8x256);
  const uint8_t* tail =
      tail_tokens != 0 ? prepared + prepared_bytes(n_tokens - tail_tokens, n_blocks) + pairs_bytes(n_blocks) : nullptr;
  const auto tile_act = [&](size_t j) { return j * kTileTokens + kTileTokens <= n_tokens ? act + j * kTileTokens * act_stride : tail; };
  const auto tile_stride = [&](size_t j) { return j * kTileTokens + kTileTokens <= n_tokens ? act_stride : row_bytes; };
  // Two row groups at a time, so that each A tile (16 tokens' chunk, from L2) serves four products.
  auto* group = reinterpret_cast<GroupBlock*>(t_weights.reserve(2 * n_blocks * sizeof(GroupBlock)));
  const size_t acc_floats = n_tiles * kTileTokens * kGroupRows;
  auto* acc = reinterpret_cast<float*>(t_acc.reserve(2 * acc_floats * sizeof(float)));
  const TileConfig config = make_config();
  const TileScope tiles(config);
  alignas(64) int32_t c[4][kTileTokens * kGroupRows];
  for (size_t r0 = 0; r0 < n_rows; r0 += 2 * kGroupRows) {
    const size_t nr0 = std::min(kGroupRows, n_rows - r0);
    const size_t nr1 = std::min(kGroupRows, n_rows - r0 - nr0);
    const GroupBlock* g0 = group;
    const GroupBlock* g1 = group + n_blocks;
    const auto prepare = [&](size_t first, size_t n_valid, GroupBlock* out) {
      if constexpr (kPacked) {
        prepare_group(PackedGroup{w + first * w_stride}, n_blocks, out);
      } else {
        prepare_group(GgufGroup(w + first * w_stride, w_stride, n_valid), n_blocks, out);
      }
    };
    prepare(r0, nr0, group);
    if (nr1 != 0) prepare(r0 + kGroupRows, nr1, group + n_blocks);
    std::memset(acc, 0, 2 * acc_floats * sizeof(float));
    for (size_t b = 0; b < n_blocks; ++b) {
      const size_t off = b * sizeof(ActQ8x256);
      for (size_t j = 0; j < n_tiles; ++j) {
        const uint8_t* a = tile_act(j) + off;
        const size_t stride = tile_stride(j);
        _tile_zero(0);
        _tile_zero(1);
        if (nr1 != 0) {
          _tile_zero(2);
          _tile_zero(3);
          for (size_t k = 0; k < 4; ++k) {
            VKS_TILE_LOAD(4, a + 64 * k, stride);
            VKS_TILE_LOAD(5, g0[b].lo[k], 64);
            _tile_dpbsud(0, 4, 5);
            VKS_TILE_LOAD(6, g0[b].hi[k], 64);
            _tile_dpbsud(1, 4, 6);
            VKS_TILE_LOAD(7, g1[b].lo[k], 64);
            _tile_dpbsud(2, 4, 7);
            VKS_TILE_LOAD(5, g1[b].hi[k], 64);
            _tile_dpbsud(3, 4, 5);
          }
        } else {
          for (size_t k = 0; k < 4; ++k) {
            VKS_TILE_LOAD(4, a + 64 * k, stride);
            VKS_TILE_LOAD(5, g0[b].lo[k], 64);
            _tile_dpbsud(0, 4, 5);
            VKS_TILE_LOAD(6, g0[b].hi[k], 64);
            _tile_dpbsud(1, 4, 6);
          }
        }
        VKS_TILE_STORE(0, c[0], 64);
        VKS_TILE_STORE(1, c[1], 64);
        if (nr1 != 0) {
          VKS_TILE_STORE(2, c[2], 64);
          VKS_TILE_STORE(3, c[3], 64);
        }
        const size_t t0 = j * kTileTokens, n = std::min(kTileTokens, n_tokens - t0);
        const uint8_t* x = act + off + t0 * act_stride;
        finish_block(c[0], c[1], g0[b], x, act_stride, pairs + t0 * n_blocks + b, n_blocks, n, acc + t0 * kGroupRows);
        if (nr1 != 0) {
          finish_block(c[2], c[3], g1[b], x, act_stride, pairs + t0 * n_blocks + b, n_blocks, n,
                       acc + acc_floats + t0 * kGroupRows);
        }
      }
    }
    for (size_t i = 0; i < (nr1 != 0 ? 2u : 1u); ++i) {
      const auto row_mask = static_cast<__mmask16>((1u << (i == 0 ? nr0 : nr1)) - 1);
      const float* from = acc + i * acc_floats;
      float* to = y + r0 + i * kGroupRows;
      for (size_t t = 0; t < n_tokens; ++t) _mm512_mask_storeu_ps(to + t * y_stride, row_mask, _mm512_load_ps(from + 16 * t));
    }
  }
}

#undef VKS_TILE_LOAD
#undef VKS_TILE_STORE

// ---- fewer tokens: four rows per register, vpdpbusd ----
// Row i's 16-byte chunks in 128-bit lane i (kernels_avx512vnni.cpp's layout): per sub-block two
// vpdpbusd give its products four to an int32 (8 * 15 * 127 < 2^15, so the int32 is its own low
// int16), and a vpdpwssd against the scale (low int16; high zero) adds sc_j times them into the
// row's four int32, whose sum is S. M likewise from the 16 activation sums against each min twice.

inline __m128i load16(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// Row i's 16 bytes at rows[i] + off, in 128-bit lane i.
inline __m512i rows16(const uint8_t* const* rows, size_t off) {
  __m512i v = _mm512_castsi128_si512(load16(rows[0] + off));
  v = _mm512_inserti32x4(v, load16(rows[1] + off), 1);
  v = _mm512_inserti32x4(v, load16(rows[2] + off), 2);
  return _mm512_inserti32x4(v, load16(rows[3] + off), 3);
}

// The half in the low 16 bits of int32 0 of each 128-bit lane, as a float in all four of its lanes.
inline __m512 lane_halves(__m512i v) {
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_shuffle_epi32(v, _MM_PERM_AAAA)));
}

inline __m512i every_lane(const void* p) { return _mm512_broadcast_i32x4(load16(p)); }

// The sum of each 128-bit lane's four int32, in all four.
inline __m512i lane_sums(__m512i v) {
  v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_BADC));
  return _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
}

// A block of four rows, unpacked.
struct alignas(64) Rows4 {
  __m512i q[8][2];           // sub-block j's elements 0..15 and 16..31, unsigned 0..15
  __m512i sc[8];             // scale j of each row, zero-extended into every int32 of its lane
  __m512i mins_lo, mins_hi;  // each min twice, as int16 (one per 16-element activation sum)
  __m512 d, dmin;
};

// llama.cpp's unpacking of the 12 scale bytes, on int32 1..3 of each lane (kernels_avx512vnni.cpp's
// Q4_Kx4::scales_mins): per row, bytes 0..7 the 8 scales, 8..15 the 8 mins.
inline __m512i scales_mins(__m512i head) {
  const __m512i u = _mm512_shuffle_epi32(head, _MM_PERM_DCDB);   // [u0, u2, u1, u2]
  const __m512i hi = _mm512_shuffle_epi32(head, _MM_PERM_CBBB);  // [_, u0, _, u1]
  const __m512i low6 = _mm512_set1_epi32(0x3f3f3f3f), low4 = _mm512_set1_epi32(0x0f0f0f0f);
  const __m512i mask_a = _mm512_mask_blend_epi32(0xAAAA, low6, low4);
  const __m512i part1 = _mm512_and_si512(
      _mm512_srlv_epi32(u, _mm512_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4)), mask_a);
  const __m512i top2 = _mm512_maskz_mov_epi32(0xAAAA, _mm512_set1_epi32(0x03030303));
  const __m512i part2 = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hi, 6), top2), 4);
  return _mm512_or_si512(part1, part2);
}

__attribute__((always_inline)) inline void load_rows4(const uint8_t* const* rows, size_t off, Rows4& w) {
  const __m512i head = rows16(rows, off);  // d, dmin and the 12 scale bytes of each row
  w.d = lane_halves(head);
  w.dmin = lane_halves(_mm512_srli_epi32(head, 16));
  const __m512i sm = scales_mins(head);
  for (int j = 0; j < 8; ++j) w.sc[j] = _mm512_shuffle_epi8(sm, _mm512_set1_epi32(static_cast<int32_t>(0x80808000u | j)));
  const __m512i zero_hi = _mm512_set1_epi16(static_cast<int16_t>(0x8000));
  w.mins_lo = _mm512_shuffle_epi8(sm, _mm512_or_si512(zero_hi, _mm512_broadcast_i32x4(_mm_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11))));
  w.mins_hi = _mm512_shuffle_epi8(sm, _mm512_or_si512(zero_hi, _mm512_broadcast_i32x4(_mm_setr_epi16(12, 12, 13, 13, 14, 14, 15, 15))));
  const __m512i m4 = _mm512_set1_epi8(0xF);
  for (int p = 0; p < 4; ++p) {
    const __m512i lo = rows16(rows, off + 16 + 32 * p);
    const __m512i hi = rows16(rows, off + 32 + 32 * p);
    w.q[2 * p][0] = _mm512_and_si512(lo, m4);
    w.q[2 * p][1] = _mm512_and_si512(hi, m4);
    w.q[2 * p + 1][0] = _mm512_and_si512(_mm512_srli_epi16(lo, 4), m4);
    w.q[2 * p + 1][1] = _mm512_and_si512(_mm512_srli_epi16(hi, 4), m4);
  }
}

// The convention's step for NT tokens of one block: acc[t] (row i in floats 4i..4i+3).
template <int NT>
__attribute__((always_inline)) inline void dot_rows4(const Rows4& w, const ActQ8x256* const* x, __m512* acc) {
  __m512i l[NT];
  for (int t = 0; t < NT; ++t) l[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    for (int t = 0; t < NT; ++t) {
      __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.q[j][0], every_lane(x[t]->qs + 32 * j));
      p = _mm512_dpbusd_epi32(p, w.q[j][1], every_lane(x[t]->qs + 32 * j + 16));
      l[t] = _mm512_dpwssd_epi32(l[t], p, w.sc[j]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    const __m512 dx = _mm512_set1_ps(x[t]->d);
    __m512i m = _mm512_dpwssd_epi32(_mm512_setzero_si512(), every_lane(x[t]->bsums), w.mins_lo);
    m = lane_sums(_mm512_dpwssd_epi32(m, every_lane(x[t]->bsums + 8), w.mins_hi));
    const __m512 sum = _mm512_mul_ps(_mm512_cvtepi32_ps(lane_sums(l[t])), _mm512_mul_ps(w.d, dx));
    const __m512 mins = _mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(w.dmin, dx));
    acc[t] = _mm512_sub_ps(_mm512_add_ps(acc[t], sum), mins);
  }
}

// Tokens whose products share one read of the block's registers (as the avx512vnni level's Q4_K).
constexpr int kGroup = 8;

// Tokens [T0, NT) of a block step in groups of at most kGroup, as even as possible (9: 5 + 4).
template <int NT, int T0 = 0>
__attribute__((always_inline)) inline void dot_groups(const Rows4& w, const ActQ8x256* const* a, size_t b, __m512* acc) {
  if constexpr (T0 < NT) {
    constexpr int kLeft = NT - T0, kGroups = (kLeft + kGroup - 1) / kGroup, G = (kLeft + kGroups - 1) / kGroups;
    const ActQ8x256* x[G];
    for (int g = 0; g < G; ++g) x[g] = a[T0 + g] + b;
    dot_rows4<G>(w, x, acc + T0);
    dot_groups<NT, T0 + G>(w, a, b, acc);
  }
}

// Four rows at a time; each block step prefetches its share of the next four rows (one sequential
// stream for memory, as the avx512vnni level reads).
template <int NT>
void few_tokens(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                size_t n_blocks, float* y, size_t y_stride) {
  constexpr size_t kStep = 4 * kBytes;
  const ActQ8x256* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const ActQ8x256*>(act + static_cast<size_t>(t) * act_stride);
  for (size_t r = 0; r < n_rows; r += 4) {
    const uint8_t* rows[4];
    for (size_t i = 0; i < 4; ++i) rows[i] = w + std::min(r + i, n_rows - 1) * w_stride;
    const uint8_t* ahead = r + 8 <= n_rows ? w + (r + 4) * w_stride : nullptr;
    __m512 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
    alignas(64) Rows4 wb;
    for (size_t b = 0; b < n_blocks; ++b) {
      if (ahead != nullptr) util::prefetch_range<util::PrefetchTo::kL1>(ahead + b * kStep, kStep);
      load_rows4(rows, b * kBytes, wb);
      // Through a pointer the compiler cannot follow: with more than one group the block stays in
      // wb and each group rereads it from L1, rather than being held in registers across groups.
      const Rows4* wp = &wb;
      if constexpr (NT > kGroup) asm("" : "+r"(wp));
      dot_groups<NT>(*wp, a, b, acc);
    }
    const size_t n_valid = std::min<size_t>(4, n_rows - r);
    for (int t = 0; t < NT; ++t) {
      alignas(64) float out[16];
      _mm512_store_ps(out, acc[t]);
      for (size_t i = 0; i < n_valid; ++i) y[static_cast<size_t>(t) * y_stride + r + i] = out[4 * i];
    }
  }
}

// ---- packed rows (WeightLayout::kRows16), fewer tokens: sixteen rows per register ----
// A packed block's dword k of the 16 rows is one load (packed_rows.h), so row r is lane r of every
// register, as in the tiles' C: per chunk of 64 elements, eight loads give sub-blocks 2c (the low
// nibbles) and 2c + 1 (the high ones, masked in place: 16 times their value) for every row, one
// vpdpbusd each against the token's dword broadcast. P_j is then exact in an int32 per row
// (|P_j| <= 32 * 15 * 127), and S = sum_j sc_j * P_j takes one vpmulld per sub-block; the high
// sub-blocks' sum, 16 times theirs, is shifted back once (exact: every term is a multiple of 16;
// |16 sum| <= 4 * 63 * 16 * 60960 < 2^31). M: per sub-block, its min in both int16 of a row's
// int32 against the token's two 16-element sums (vpdpwssd). The same S and M as the GGUF layout's
// kernels, the same float step: the same bits.

// n_rows a multiple of 16. Each block step prefetches its share of the next group into L2 (one
// sequential stream, as the packed Q4_0 and Q8_0 kernels read).
template <int NT>
void packed_few_tokens(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                       size_t n_blocks, float* y, size_t y_stride) {
  const ActQ8x256* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const ActQ8x256*>(act + static_cast<size_t>(t) * act_stride);
  const __m512i lo_mask = _mm512_set1_epi8(0x0F), hi_mask = _mm512_set1_epi8(static_cast<char>(0xF0));
  for (size_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const uint8_t* g = w + r0 * w_stride;
    const uint8_t* ahead = r0 + kGroupRows < n_rows ? g + kGroupRows * w_stride : nullptr;
    __m512 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
    for (size_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = g + b * kPackedBlock;
      PackedScales ps;
      packed_scales(blk, ps);
      __m512i s_lo[NT], s_hi[NT];
      for (int t = 0; t < NT; ++t) s_lo[t] = s_hi[t] = _mm512_setzero_si512();
      // Unrolled (chunks and tokens): s_lo and s_hi then stay in registers, not arrays in memory.
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        // Chunk c: nibble dwords 8c..8c+7 (the block's dwords 4 + 8c + i).
        if (ahead != nullptr) {
          constexpr size_t kShare = kPackedBlock / 4;
          util::prefetch_range<util::PrefetchTo::kL2>(ahead + b * kPackedBlock + c * kShare, kShare);
        }
        __m512i lo[8], hi[8];
        for (int i = 0; i < 8; ++i) {
          const __m512i v = _mm512_loadu_si512(blk + 64 * (4 + 8 * c + i));
          lo[i] = _mm512_and_si512(v, lo_mask);
          hi[i] = _mm512_and_si512(v, hi_mask);
        }
        const __m512i sc_lo = scale_of(ps.bytes, 2 * c), sc_hi = scale_of(ps.bytes, 2 * c + 1);
#pragma GCC unroll 12
        for (int t = 0; t < NT; ++t) {
          const int8_t* q = a[t][b].qs + 64 * c;
          __m512i p_lo = _mm512_setzero_si512(), p_hi = _mm512_setzero_si512();
          for (int i = 0; i < 8; ++i) {
            p_lo = _mm512_dpbusd_epi32(p_lo, lo[i], dword_at(q + 4 * i));
            p_hi = _mm512_dpbusd_epi32(p_hi, hi[i], dword_at(q + 32 + 4 * i));
          }
          s_lo[t] = _mm512_add_epi32(s_lo[t], _mm512_mullo_epi32(p_lo, sc_lo));
          s_hi[t] = _mm512_add_epi32(s_hi[t], _mm512_mullo_epi32(p_hi, sc_hi));
        }
      }
      __m512i min2[8];
      min_pairs(ps.bytes, min2);
      for (int t = 0; t < NT; ++t) {
        const ActQ8x256& x = a[t][b];
        const __m512i s = _mm512_add_epi32(s_lo[t], _mm512_srai_epi32(s_hi[t], 4));
        const __m512i m = min_sum(min2, x.bsums);
        const __m512 dx = _mm512_set1_ps(x.d);
        const __m512 sum = _mm512_mul_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(ps.d, dx));
        const __m512 mins = _mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(ps.dmin, dx));
        acc[t] = _mm512_sub_ps(_mm512_add_ps(acc[t], sum), mins);
      }
    }
    for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + static_cast<size_t>(t) * y_stride + r0, acc[t]);
  }
}

// From kTileFrom tokens every token tile, the last padded (the tiles qmatmul prepares: the
// thresholds in add_amx_kquant_kernels); fewer tokens by the vector path of w's layout. kPacked: w
// in WeightLayout::kRows16 (KernelTable::packed; n_rows a multiple of 16).
template <bool kPacked>
void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
          const uint8_t* prepared, size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  if (n_tokens >= static_cast<size_t>(kTileFrom)) {
    gemm_tiles<kPacked>(w, w_stride, n_rows, act, act_stride, prepared, n_tokens, n_blocks, y, y_stride);
    return;
  }
  util::with_count<kTileFrom - 1>(n_tokens, [&](auto nt) {
    if constexpr (kPacked) {
      packed_few_tokens<nt()>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride);
    } else {
      few_tokens<nt()>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride);
    }
  });
}

}  // namespace

void add_amx_kquant_kernels(KernelTable& table) {
  table.gemm[12] = nullptr;  // the avx512vnni level's: this runs prepared instead
  // A work item of kTileFrom tokens or more reads every tile, the last one whatever its tokens.
  table.prepared[12] = {gemm<false>, prepare_tile, prepared_bytes, kTileFrom, 1};
  // As Q4_0's: a prefill of 128 tokens prepares each row group once.
  constexpr uint16_t kItemTokens = 128;
  static_assert(kItemTokens % kTileTokens == 0, "a work item's tiles are whole tiles of the call's");
  table.tokens_per_item[12] = kItemTokens;
  table.packed[12] = {{gemm<true>, prepare_tile, prepared_bytes, kTileFrom, 1}, kItemTokens};
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
