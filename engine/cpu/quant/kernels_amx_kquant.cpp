// The AMX level's Q4_K, under the "K-block sums" convention (kernels.h): per 256-element block one
// exact int32 S = sum_j sc_j * P_j for the scaled products and one M = sum_j m_j * (sub-block sum)
// for the mins, then one float accumulator per output.
//
// Tiles (4 tokens or more): the weights are A, unsigned bytes with each sub-block's 6-bit scale
// folded in. A 4-bit nibble times a 4-bit factor fits a byte, so a row's block becomes two
// 256-byte rows, q * (sc & 15) and q * (sc >> 4), and S = C_lo + 16 * C_hi, exact: two tile
// products (K = 64 bytes, four chunks per block) give S for 16 rows x 16 tokens with no integer
// multiply per output. The activations are B in the VNNI layout; M comes from their 16-element
// sums by vpdpwssd (an int16 pair of mins per row against a pair of sub-block sums per token).
// Fewer tokens run four rows per register with vpdpbusd (the avx512vnni level's way of reading
// Q4_K), summed to the same S and M: the same integers, the same float steps, the same bits.
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

// As kernels_amx.cpp: GCC's _tile_loadd does not say it reads memory, so a store into the scratch
// just before it could be moved past it; these do.
#define VKS_TILE_LOAD(tile, base, stride)                                                      \
  __asm__ volatile("{tileloadd\t(%0,%1,1), %%tmm" #tile "|tileloadd\t%%tmm" #tile ", [%0+%1*1]}" \
                   ::"r"(static_cast<const void*>(base)), "r"(static_cast<long>(stride))            \
                   : "memory")
#define VKS_TILE_STORE(tile, base, stride)                                                       \
  __asm__ volatile("{tilestored\t%%tmm" #tile ", (%0,%1,1)|tilestored\t[%0+%1*1], %%tmm" #tile "}" \
                   ::"r"(static_cast<void*>(base)), "r"(static_cast<long>(stride))                    \
                   : "memory")

constexpr size_t kBytes = 144;      // a Q4_K block: d, dmin, 12 scale bytes, 128 bytes of nibbles
constexpr size_t kGroupRows = 16;   // weight rows per tile (A's and C's rows)
constexpr size_t kTileTokens = 16;  // tokens per tile (C's columns)
// From this many tokens the tiles run: below it, preparing a row group's A costs more than the
// vector products of its few tokens (vks_bench_cpu_kernels --sweep).
constexpr size_t kTileFrom = 4;

// ---- a group of 16 weight rows, prepared once per call for every token tile ----

// One block of the group: A's two byte planes (row r's 256 elements times the low and high bits of
// their sub-block's scale), each row's mins as int16 pairs (m_2i | m_2i+1 << 16) for vpdpwssd,
// and the rows' d and dmin (zero past the group's last row).
struct alignas(64) GroupBlock {
  uint8_t lo[kGroupRows][256];
  uint8_t hi[kGroupRows][256];
  int32_t min_pairs[kGroupRows][4];
  float d[kGroupRows];
  float dmin[kGroupRows];
};
static_assert(sizeof(GroupBlock) % 64 == 0);

// Byte 2i of each 16-bit pair takes scale byte `first` (lanes 0-1, sub-block 2n) or `first + 1`
// (lanes 2-3, sub-block 2n + 1), the odd bytes zero: the multiplier of vpmaddubsw for one 64-byte
// run of a row.
inline __m512i scale_pattern(__m512i scales, int first) {
  const __m512i index = _mm512_set_epi64(
      static_cast<int64_t>(0x8000800080008000ull | static_cast<uint64_t>(first + 1) * 0x0001000100010001ull),
      static_cast<int64_t>(0x8000800080008000ull | static_cast<uint64_t>(first + 1) * 0x0001000100010001ull),
      static_cast<int64_t>(0x8000800080008000ull | static_cast<uint64_t>(first + 1) * 0x0001000100010001ull),
      static_cast<int64_t>(0x8000800080008000ull | static_cast<uint64_t>(first + 1) * 0x0001000100010001ull),
      static_cast<int64_t>(0x8000800080008000ull | static_cast<uint64_t>(first) * 0x0001000100010001ull),
      static_cast<int64_t>(0x8000800080008000ull | static_cast<uint64_t>(first) * 0x0001000100010001ull),
      static_cast<int64_t>(0x8000800080008000ull | static_cast<uint64_t>(first) * 0x0001000100010001ull),
      static_cast<int64_t>(0x8000800080008000ull | static_cast<uint64_t>(first) * 0x0001000100010001ull));
  return _mm512_shuffle_epi8(scales, index);
}

// Bytes q * s for unsigned bytes q and per-pair multipliers s in the even bytes (q * s <= 225 fits a
// byte): vpmaddubsw gives the even bytes' products as int16, and the odd bytes' after a shift.
inline __m512i times_scale(__m512i q, __m512i q_odd, __m512i pattern) {
  const __m512i even = _mm512_maddubs_epi16(q, pattern);
  const __m512i odd = _mm512_maddubs_epi16(q_odd, pattern);
  return _mm512_or_si512(even, _mm512_slli_epi16(odd, 8));
}

// Row r of a group's block from the Q4_K block at p.
inline void prepare_row(const uint8_t* p, size_t r, GroupBlock& out) {
  out.d[r] = _cvtsh_ss(util::load_u16(p));
  out.dmin[r] = _cvtsh_ss(util::load_u16(p + 2));
  alignas(16) uint8_t scales[16];  // 0..7: sc & 15, 8..15: sc >> 4
  int m[8];
  for (int j = 0; j < 8; ++j) {
    int sc = 0;
    util::scale_min_k4(j, p + 4, sc, m[j]);
    scales[j] = static_cast<uint8_t>(sc & 15);
    scales[8 + j] = static_cast<uint8_t>(sc >> 4);
  }
  for (int i = 0; i < 4; ++i) {
    out.min_pairs[r][i] = static_cast<int32_t>(static_cast<uint32_t>(m[2 * i]) | static_cast<uint32_t>(m[2 * i + 1]) << 16);
  }
  const __m512i sv = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(scales)));
  const __m512i m4 = _mm512_set1_epi8(0xF);
  for (int n = 0; n < 4; ++n) {
    // Elements 64n..64n+63: sub-block 2n the low nibbles of qs[32n..32n+31], 2n + 1 the high ones.
    const __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 + 32 * n)));
    const __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFFFF0000u, v, 4), m4);
    const __m512i q_odd = _mm512_srli_epi16(q, 8);
    _mm512_store_si512(out.lo[r] + 64 * n, times_scale(q, q_odd, scale_pattern(sv, 2 * n)));
    _mm512_store_si512(out.hi[r] + 64 * n, times_scale(q, q_odd, scale_pattern(sv, 8 + 2 * n)));
  }
}

// Rows [0, n_valid) of the group at g (rows w_stride apart), every block; rows past n_valid zero.
void prepare_group(const uint8_t* g, size_t w_stride, size_t n_valid, size_t n_blocks, GroupBlock* out) {
  for (size_t b = 0; b < n_blocks; ++b) {
    GroupBlock& o = out[b];
    for (size_t r = 0; r < n_valid; ++r) prepare_row(g + r * w_stride + b * kBytes, r, o);
    for (size_t r = n_valid; r < kGroupRows; ++r) {
      std::memset(o.lo[r], 0, 256);
      std::memset(o.hi[r], 0, 256);
      std::memset(o.min_pairs[r], 0, sizeof(o.min_pairs[r]));
      o.d[r] = o.dmin[r] = 0.0f;
    }
  }
}

// ---- up to 16 tokens of one block as B ----

// B of the block's four K = 64 chunks (row 16k + i of b: elements 4(16k + i)..+3, the token in
// column c being token_of(c), as kernels_amx.cpp orders them), each token's sub-block sums as
// int16 pairs (bs_2i | bs_2i+1 << 16, bs_j = the sum of sub-block j's 32 activations) and its d
// (zero for tokens past the last, whose outputs are not stored).
struct alignas(64) TokenBlock {
  int8_t b[64][64];
  int32_t sum_pairs[4][16];
  float d[16];
};
static_assert(sizeof(TokenBlock) % 64 == 0);

constexpr size_t token_of(size_t c) { return 4 * (c % 4) + c / 4; }

// Tokens [0, n_valid) of act rearranged into n_blocks TokenBlocks: per 32 activations of the 16
// tokens, 8 dwords each transposed in registers as kernels_amx.cpp's gather_tokens does.
void gather_tokens(const uint8_t* act, size_t act_stride, size_t n_valid, size_t n_blocks, TokenBlock* out) {
  alignas(64) int32_t d_index[16];
  __mmask16 d_valid = 0;
  for (size_t c = 0; c < 16; ++c) {
    d_index[c] = static_cast<int32_t>(token_of(c) * act_stride + offsetof(ActQ8x256, d));
    if (token_of(c) < n_valid) d_valid = static_cast<__mmask16>(d_valid | (1u << c));
  }
  const __m512i index = _mm512_load_si512(d_index);
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = act + b * sizeof(ActQ8x256);
    TokenBlock& o = out[b];
    for (size_t sb = 0; sb < 8; ++sb) {
      const uint8_t* base = block + 32 * sb;
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
      int8_t(*rows)[64] = o.b + 8 * sb;
      for (size_t h = 0; h < 2; ++h) {
        const __m512i t0 = _mm512_unpacklo_epi32(u[0][h], u[1][h]), t1 = _mm512_unpackhi_epi32(u[0][h], u[1][h]);
        const __m512i t2 = _mm512_unpacklo_epi32(u[2][h], u[3][h]), t3 = _mm512_unpackhi_epi32(u[2][h], u[3][h]);
        _mm512_store_si512(rows[4 * h + 0], _mm512_unpacklo_epi64(t0, t2));
        _mm512_store_si512(rows[4 * h + 1], _mm512_unpackhi_epi64(t0, t2));
        _mm512_store_si512(rows[4 * h + 2], _mm512_unpacklo_epi64(t1, t3));
        _mm512_store_si512(rows[4 * h + 3], _mm512_unpackhi_epi64(t1, t3));
      }
    }
    for (size_t c = 0; c < 16; ++c) {
      const size_t t = token_of(c);
      if (t >= n_valid) {
        for (int i = 0; i < 4; ++i) o.sum_pairs[i][c] = 0;
        continue;
      }
      const auto& a = *reinterpret_cast<const ActQ8x256*>(block + t * act_stride);
      for (int i = 0; i < 4; ++i) {
        const int bs0 = a.bsums[4 * i] + a.bsums[4 * i + 1], bs1 = a.bsums[4 * i + 2] + a.bsums[4 * i + 3];
        o.sum_pairs[i][c] = static_cast<int32_t>((static_cast<uint32_t>(bs0) & 0xFFFFu) | static_cast<uint32_t>(bs1) << 16);
      }
    }
    _mm512_store_ps(o.d, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), d_valid, index, block, 1));
  }
}

// ---- the tiles: 16 rows x 16 tokens ----

struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0 and 3: A (16 rows x 64 bytes); 1 and 4: B (16 rows of 16 tokens x 4 bytes); 2, 5, 6, 7:
// C (16 rows x 16 int32), two blocks' C_lo and C_hi in flight.
TileConfig make_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.rows[t] = 16;
    c.colsb[t] = 64;
  }
  return c;
}

class TileScope {
 public:
  explicit TileScope(const TileConfig& config) { _tile_loadconfig(&config); }
  ~TileScope() { _tile_release(); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

// The convention's step for the 16 rows of one block (C_lo and C_hi stored at lo and hi): per row,
// S = C_lo + 16 C_hi, M from the sums, acc = (acc + float(S) * (d_w * d_x)) - float(M) * (dmin_w * d_x)
// on the 16 tokens at once.
inline void finish_block(const int32_t* lo, const int32_t* hi, const GroupBlock& w, const TokenBlock& x,
                         __m512* acc) {
  const __m512 dx = _mm512_load_ps(x.d);
  const __m512i s0 = _mm512_load_si512(x.sum_pairs[0]), s1 = _mm512_load_si512(x.sum_pairs[1]);
  const __m512i s2 = _mm512_load_si512(x.sum_pairs[2]), s3 = _mm512_load_si512(x.sum_pairs[3]);
  for (size_t r = 0; r < kGroupRows; ++r) {
    const __m512i s = _mm512_add_epi32(_mm512_load_si512(lo + 16 * r), _mm512_slli_epi32(_mm512_load_si512(hi + 16 * r), 4));
    __m512i m = _mm512_dpwssd_epi32(_mm512_setzero_si512(), s0, _mm512_set1_epi32(w.min_pairs[r][0]));
    m = _mm512_dpwssd_epi32(m, s1, _mm512_set1_epi32(w.min_pairs[r][1]));
    m = _mm512_dpwssd_epi32(m, s2, _mm512_set1_epi32(w.min_pairs[r][2]));
    m = _mm512_dpwssd_epi32(m, s3, _mm512_set1_epi32(w.min_pairs[r][3]));
    const __m512 sum = _mm512_mul_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(_mm512_set1_ps(w.d[r]), dx));
    const __m512 mins = _mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(_mm512_set1_ps(w.dmin[r]), dx));
    acc[r] = _mm512_sub_ps(_mm512_add_ps(acc[r], sum), mins);
  }
}

// One group of 16 rows times one tile of 16 tokens, every block; acc[r] holds row r's 16 tokens.
void tile_tokens(const GroupBlock* w, const TokenBlock* x, size_t n_blocks, __m512* acc) {
  alignas(64) int32_t c[4][kGroupRows * kTileTokens];
  for (size_t r = 0; r < kGroupRows; ++r) acc[r] = _mm512_setzero_ps();
  size_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    _tile_zero(2);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
    for (size_t k = 0; k < 4; ++k) {
      VKS_TILE_LOAD(1, x[b].b[16 * k], 64);
      VKS_TILE_LOAD(0, w[b].lo[0] + 64 * k, 256);
      _tile_dpbusd(2, 0, 1);
      VKS_TILE_LOAD(3, w[b].hi[0] + 64 * k, 256);
      _tile_dpbusd(5, 3, 1);
      VKS_TILE_LOAD(4, x[b + 1].b[16 * k], 64);
      VKS_TILE_LOAD(0, w[b + 1].lo[0] + 64 * k, 256);
      _tile_dpbusd(6, 0, 4);
      VKS_TILE_LOAD(3, w[b + 1].hi[0] + 64 * k, 256);
      _tile_dpbusd(7, 3, 4);
    }
    VKS_TILE_STORE(2, c[0], 64);
    VKS_TILE_STORE(5, c[1], 64);
    VKS_TILE_STORE(6, c[2], 64);
    VKS_TILE_STORE(7, c[3], 64);
    finish_block(c[0], c[1], w[b], x[b], acc);
    finish_block(c[2], c[3], w[b + 1], x[b + 1], acc);
  }
  if (b < n_blocks) {
    _tile_zero(2);
    _tile_zero(5);
    for (size_t k = 0; k < 4; ++k) {
      VKS_TILE_LOAD(1, x[b].b[16 * k], 64);
      VKS_TILE_LOAD(0, w[b].lo[0] + 64 * k, 256);
      _tile_dpbusd(2, 0, 1);
      VKS_TILE_LOAD(3, w[b].hi[0] + 64 * k, 256);
      _tile_dpbusd(5, 3, 1);
    }
    VKS_TILE_STORE(2, c[0], 64);
    VKS_TILE_STORE(5, c[1], 64);
    finish_block(c[0], c[1], w[b], x[b], acc);
  }
}

#undef VKS_TILE_LOAD
#undef VKS_TILE_STORE

thread_local QmatmulScratch t_weights;  // a group's GroupBlocks
thread_local QmatmulScratch t_tokens;   // the call's TokenBlocks

void gemm_tiles(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride,
                size_t n_tokens, size_t n_blocks, float* y, size_t y_stride) {
  const size_t n_tiles = (n_tokens + kTileTokens - 1) / kTileTokens;
  auto* x = reinterpret_cast<TokenBlock*>(t_tokens.reserve(n_tiles * n_blocks * sizeof(TokenBlock)));
  for (size_t j = 0; j < n_tiles; ++j) {
    gather_tokens(act + j * kTileTokens * act_stride, act_stride, std::min(kTileTokens, n_tokens - j * kTileTokens),
                  n_blocks, x + j * n_blocks);
  }
  auto* group = reinterpret_cast<GroupBlock*>(t_weights.reserve(n_blocks * sizeof(GroupBlock)));
  const TileConfig config = make_config();
  const TileScope tiles(config);
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(kTileTokens));
  for (size_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const size_t nr = std::min(kGroupRows, n_rows - r0);
    prepare_group(w + r0 * w_stride, w_stride, nr, n_blocks, group);
    const auto row_mask = static_cast<__mmask16>((1u << nr) - 1);
    for (size_t j = 0; j < n_tiles; ++j) {
      __m512 acc[kGroupRows];
      tile_tokens(group, x + j * n_blocks, n_blocks, acc);
      alignas(64) float out[kGroupRows][kTileTokens];
      for (size_t r = 0; r < kGroupRows; ++r) _mm512_store_ps(out[r], acc[r]);
      // Column c (token token_of(c)) of the 16 rows, gathered and stored as one run of y.
      const size_t t0 = j * kTileTokens, nt = std::min(kTileTokens, n_tokens - t0);
      for (size_t c = 0; c < kTileTokens; ++c) {
        if (token_of(c) >= nt) continue;
        const __m512 column = _mm512_i32gather_ps(rows, &out[0][c], 4);
        _mm512_mask_storeu_ps(y + (t0 + token_of(c)) * y_stride + r0, row_mask, column);
      }
    }
  }
}

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

inline void prefetch_step(const uint8_t* p, size_t bytes) {
  for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T0);
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
    Rows4 wb;
    for (size_t b = 0; b < n_blocks; ++b) {
      if (ahead != nullptr) prefetch_step(ahead + b * kStep, kStep);
      load_rows4(rows, b * kBytes, wb);
      const ActQ8x256* x[NT];
      for (int t = 0; t < NT; ++t) x[t] = a[t] + b;
      dot_rows4<NT>(wb, x, acc);
    }
    const size_t n_valid = std::min<size_t>(4, n_rows - r);
    for (int t = 0; t < NT; ++t) {
      alignas(64) float out[16];
      _mm512_store_ps(out, acc[t]);
      for (size_t i = 0; i < n_valid; ++i) y[static_cast<size_t>(t) * y_stride + r + i] = out[4 * i];
    }
  }
}

void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, size_t n_tokens,
          size_t n_blocks, float* y, size_t y_stride) {
  if (n_tokens >= kTileFrom) {
    gemm_tiles(w, w_stride, n_rows, act, act_stride, n_tokens, n_blocks, y, y_stride);
    return;
  }
  switch (n_tokens) {
    case 3: few_tokens<3>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride); break;
    case 2: few_tokens<2>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride); break;
    case 1: few_tokens<1>(w, w_stride, n_rows, act, act_stride, n_blocks, y, y_stride); break;
    default: break;
  }
}

}  // namespace

void add_amx_kquant_kernels(KernelTable& table) {
  table.gemm[12] = gemm;
  // As Q4_0's: a prefill of 128 tokens prepares each row group once.
  table.tokens_per_item[12] = 128;
}

}  // namespace vks::cpuq

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
