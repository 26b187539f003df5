// The scalar level: every quantized type in plain C++, one block decoded to integers, then the lane
// convention of kernels.h computed literally. It is the definition the SIMD levels must match and
// the path of CPUs without SSSE3/AVX.
#include <cstdint>
#include <cstring>

#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/kernel_util.h"
#include "engine/cpu/quant/kernels.h"
#include "engine/gguf/iq4_values.h"
#include "engine/gguf/quant_blocks.h"
#include "engine/gguf/mxfp4_codes.h"

namespace vks::cpuq {
namespace {

using util::half_to_float;
using util::load_u16;
using util::load_u32;

enum class MinKind { kNone, kKMin, kLegacyMin };

// One weight block as integers: weight e = d * s[e] * (v[e] - offset) - dmin * mn[e]  (K-quants)
// or d * (v[e] - offset) + m (legacy).
struct Decoded {
  int v[256];
  int s[256];
  int mn[256];
  int offset = 0;
  float d = 0, dmin = 0, m = 0;
  MinKind min = MinKind::kNone;
};

void fill_unit(Decoded& o, int n) {
  for (int e = 0; e < n; ++e) {
    o.s[e] = 1;
    o.mn[e] = 0;
  }
}

// Legacy 32-element types: element e < 16 in the low nibble of qs[e], e >= 16 in the high one of
// qs[e - 16]; the fifth bit of Q5_x is bit e of qh.
void decode_q4_0(const uint8_t* b, Decoded& o) {
  o.d = half_to_float(load_u16(b));
  const uint8_t* qs = b + 2;
  for (int e = 0; e < 16; ++e) {
    o.v[e] = qs[e] & 0xF;
    o.v[e + 16] = qs[e] >> 4;
  }
  fill_unit(o, 32);
  o.offset = 8;
}

void decode_q4_1(const uint8_t* b, Decoded& o) {
  o.d = half_to_float(load_u16(b));
  o.m = half_to_float(load_u16(b + 2));
  const uint8_t* qs = b + 4;
  for (int e = 0; e < 16; ++e) {
    o.v[e] = qs[e] & 0xF;
    o.v[e + 16] = qs[e] >> 4;
  }
  fill_unit(o, 32);
  o.min = MinKind::kLegacyMin;
}

void decode_q5(const uint8_t* qs, uint32_t qh, Decoded& o) {
  for (int e = 0; e < 16; ++e) {
    o.v[e] = (qs[e] & 0xF) | static_cast<int>(((qh >> e) & 1u) << 4);
    o.v[e + 16] = (qs[e] >> 4) | static_cast<int>(((qh >> (e + 16)) & 1u) << 4);
  }
  fill_unit(o, 32);
}

void decode_q5_0(const uint8_t* b, Decoded& o) {
  o.d = half_to_float(load_u16(b));
  decode_q5(b + 6, load_u32(b + 2), o);
  o.offset = 16;
}

void decode_q5_1(const uint8_t* b, Decoded& o) {
  o.d = half_to_float(load_u16(b));
  o.m = half_to_float(load_u16(b + 2));
  decode_q5(b + 8, load_u32(b + 4), o);
  o.min = MinKind::kLegacyMin;
}

void decode_q8_0(const uint8_t* b, Decoded& o) {
  o.d = half_to_float(load_u16(b));
  for (int e = 0; e < 32; ++e) o.v[e] = static_cast<int8_t>(b[2 + e]);
  fill_unit(o, 32);
}

// MXFP4: e@0 (E8M0), then the 16 bytes of codes as Q4_0's nibbles; each code's doubled value
// (-12..12) times half the scale, taken unsigned (+12, 0..24) with offset 12 as Q4_0's nibbles.
void decode_mxfp4(const uint8_t* b, Decoded& o) {
  o.d = mxfp4::e8m0_half(b[0]);
  const uint8_t* qs = b + 1;
  for (int e = 0; e < 16; ++e) {
    o.v[e] = mxfp4::kBiasedE2M1[qs[e] & 0xF];
    o.v[e + 16] = mxfp4::kBiasedE2M1[qs[e] >> 4];
  }
  fill_unit(o, 32);
  o.offset = mxfp4::kBias;
}

// IQ4_NL: d@0, then the 16 bytes of indices as Q4_0's nibbles; each weight is its index's value
// (-127..113) times d.
void decode_iq4_nl(const uint8_t* b, Decoded& o) {
  o.d = half_to_float(load_u16(b));
  const uint8_t* qs = b + 2;
  for (int e = 0; e < 16; ++e) {
    o.v[e] = iq4::kValues[qs[e] & 0xF];
    o.v[e + 16] = iq4::kValues[qs[e] >> 4];
  }
  fill_unit(o, 32);
}

// IQ4_XS: d@0, scales_h@2, scales_l@4, qs@8. Sub-block j (32 elements) has the 6-bit scale ls
// (quant_blocks.h's iq4_xs_scale) taken as ls - 32, and IQ4_NL's indices in qs[16 j ..].
void decode_iq4_xs(const uint8_t* b, Decoded& o) {
  BlockIQ4_XS block;
  std::memcpy(&block, b, sizeof(block));
  o.d = half_to_float(block.d);
  for (int j = 0; j < 8; ++j) {
    const int ls = iq4_xs_scale(block, j);
    const uint8_t* qs = block.qs + 16 * j;
    for (int l = 0; l < 16; ++l) {
      o.v[32 * j + l] = iq4::kValues[qs[l] & 0xF];
      o.v[32 * j + l + 16] = iq4::kValues[qs[l] >> 4];
    }
    for (int l = 0; l < 32; ++l) {
      o.s[32 * j + l] = ls - 32;
      o.mn[32 * j + l] = 0;
    }
  }
}

// Q2_K: scales@0, qs@16, d@80, dmin@82. Element 128n + 32j + 16h + l is bits 2j.. of
// qs[32n + 16h + l]; its sub-block 8n + 2j + h.
void decode_q2_k(const uint8_t* b, Decoded& o) {
  const uint8_t* scales = b;
  o.d = half_to_float(load_u16(b + 80));
  o.dmin = half_to_float(load_u16(b + 82));
  for (int n = 0; n < 2; ++n) {
    const uint8_t* q = b + 16 + 32 * n;
    for (int j = 0; j < 4; ++j) {
      for (int h = 0; h < 2; ++h) {
        const int is = 8 * n + 2 * j + h;
        for (int l = 0; l < 16; ++l) {
          const int e = 128 * n + 32 * j + 16 * h + l;
          o.v[e] = (q[16 * h + l] >> (2 * j)) & 3;
          o.s[e] = scales[is] & 0xF;
          o.mn[e] = scales[is] >> 4;
        }
      }
    }
  }
  o.min = MinKind::kKMin;
}

// Q3_K: hmask@0, qs@32, scales@96, d@108. As Q2_K with a third bit from hmask[16h + l] bit 4n + j
// (set: +4) and signed scales; weight = d * s * (v - 4).
void decode_q3_k(const uint8_t* b, Decoded& o) {
  const uint8_t* hmask = b;
  int scales[16];
  util::q3_k_scales(b + 96, scales);
  o.d = half_to_float(load_u16(b + 108));
  for (int n = 0; n < 2; ++n) {
    const uint8_t* q = b + 32 + 32 * n;
    for (int j = 0; j < 4; ++j) {
      for (int h = 0; h < 2; ++h) {
        const int is = 8 * n + 2 * j + h;
        for (int l = 0; l < 16; ++l) {
          const int e = 128 * n + 32 * j + 16 * h + l;
          const int high = (hmask[16 * h + l] >> (4 * n + j)) & 1;
          o.v[e] = ((q[16 * h + l] >> (2 * j)) & 3) + 4 * high;
          o.s[e] = scales[is];
          o.mn[e] = 0;
        }
      }
    }
  }
  o.offset = 4;
}

// Q4_K: d@0, dmin@2, scales@4, qs@16. Sub-block j (32 elements) is the low (j even) or high
// nibbles of qs[32 * (j / 2) ..]. Q5_K: qh@16, qs@48; the fifth bit is bit j of qh[l].
void decode_q45_k(const uint8_t* b, const uint8_t* qs, const uint8_t* qh, Decoded& o) {
  o.d = half_to_float(load_u16(b));
  o.dmin = half_to_float(load_u16(b + 2));
  for (int j = 0; j < 8; ++j) {
    int sc = 0;
    int m = 0;
    util::scale_min_k4(j, b + 4, sc, m);
    for (int l = 0; l < 32; ++l) {
      const int e = 32 * j + l;
      const uint8_t byte = qs[32 * (j / 2) + l];
      o.v[e] = (j % 2 == 0 ? byte & 0xF : byte >> 4) + (qh != nullptr && ((qh[l] >> j) & 1) ? 16 : 0);
      o.s[e] = sc;
      o.mn[e] = m;
    }
  }
  o.min = MinKind::kKMin;
}

void decode_q4_k(const uint8_t* b, Decoded& o) { decode_q45_k(b, b + 16, nullptr, o); }
void decode_q5_k(const uint8_t* b, Decoded& o) { decode_q45_k(b, b + 48, b + 16, o); }

// Q6_K: ql@0, qh@128, scales@192, d@208. In half n, element 128n + 32c + l (c = 0..3, l < 32) has
// low bits from ql[64n + l + 32 (c & 1)] (low nibble for c < 2, high for c >= 2) and high bits
// 2c.. of qh[32n + l]; its sub-block is 8n + 2c + l / 16.
void decode_q6_k(const uint8_t* b, Decoded& o) {
  o.d = half_to_float(load_u16(b + 208));
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  for (int n = 0; n < 2; ++n) {
    const uint8_t* ql = b + 64 * n;
    const uint8_t* qh = b + 128 + 32 * n;
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int e = 128 * n + 32 * c + l;
        const uint8_t low_byte = ql[l + 32 * (c & 1)];
        const int low = c < 2 ? low_byte & 0xF : low_byte >> 4;
        o.v[e] = low | (((qh[l] >> (2 * c)) & 3) << 4);
        o.s[e] = sc[8 * n + 2 * c + l / 16];
        o.mn[e] = 0;
      }
    }
  }
  o.offset = 32;
}

struct ActLegacy {
  using Block = ActQ8x32;
  static constexpr int kSize = 32;
  static const int8_t* qs(const Block& a) { return a.qs; }
};
struct ActK {
  using Block = ActQ8x256;
  static constexpr int kSize = 256;
  static const int8_t* qs(const Block& a) { return a.qs; }
};

// One block of one token, per the lane convention.
template <class A>
void accumulate(const Decoded& w, const typename A::Block& a, float* acc, float& macc) {
  const int8_t* x = A::qs(a);
  int64_t lane[4] = {0, 0, 0, 0};
  int64_t corr = 0;
  int64_t mins = 0;
  for (int e = 0; e < A::kSize; ++e) {
    lane[(e % 16) / 4] += static_cast<int64_t>(w.s[e]) * w.v[e] * x[e];
    corr += static_cast<int64_t>(w.s[e]) * x[e];
    mins += static_cast<int64_t>(w.mn[e]) * x[e];
  }
  lane[0] -= w.offset * corr;
  const float dd = w.d * a.d;
  for (int k = 0; k < 4; ++k) acc[k] = acc[k] + static_cast<float>(static_cast<int32_t>(lane[k])) * dd;
  if (w.min == MinKind::kKMin) {
    macc = macc + static_cast<float>(static_cast<int32_t>(-mins)) * (w.dmin * a.d);
  }
}

template <>
void accumulate<ActLegacy>(const Decoded& w, const ActQ8x32& a, float* acc, float& macc) {
  int64_t lane[4] = {0, 0, 0, 0};
  for (int e = 0; e < 32; ++e) lane[(e % 16) / 4] += static_cast<int64_t>(w.v[e]) * a.qs[e];
  lane[0] -= static_cast<int64_t>(w.offset) * a.sum;
  const float dd = w.d * a.d;
  for (int k = 0; k < 4; ++k) acc[k] = acc[k] + static_cast<float>(static_cast<int32_t>(lane[k])) * dd;
  if (w.min == MinKind::kLegacyMin) macc = macc + w.m * a.s;
}

constexpr size_t kTile = 4;  // tokens sharing one decoded weight block

template <void (*Decode)(const uint8_t*, Decoded&), class A, size_t kBlockBytes>
void gemm(const uint8_t* w, size_t w_stride, size_t n_rows, const uint8_t* act, size_t act_stride, size_t n_tokens,
          size_t n_blocks, float* y, size_t y_stride) {
  using Block = typename A::Block;
  Decoded dec;
  for (size_t t0 = 0; t0 < n_tokens; t0 += kTile) {
    const size_t nt = n_tokens - t0 < kTile ? n_tokens - t0 : kTile;
    for (size_t r = 0; r < n_rows; ++r) {
      float acc[kTile][4] = {};
      float macc[kTile] = {};
      const uint8_t* row = w + r * w_stride;
      for (size_t b = 0; b < n_blocks; ++b) {
        Decode(row + b * kBlockBytes, dec);
        for (size_t t = 0; t < nt; ++t) {
          const Block* a = reinterpret_cast<const Block*>(act + (t0 + t) * act_stride) + b;
          accumulate<A>(dec, *a, acc[t], macc[t]);
        }
      }
      for (size_t t = 0; t < nt; ++t) y[(t0 + t) * y_stride + r] = util::finish(acc[t], macc[t]);
    }
  }
}

}  // namespace

void add_scalar_kernels(KernelTable& table) {
  table.quantize_q8x32 = quantize_act_q8x32;
  table.quantize_q8x256 = quantize_act_q8x256;
  table.gemm[2] = gemm<decode_q4_0, ActLegacy, 18>;
  table.gemm[3] = gemm<decode_q4_1, ActLegacy, 20>;
  table.gemm[6] = gemm<decode_q5_0, ActLegacy, 22>;
  table.gemm[7] = gemm<decode_q5_1, ActLegacy, 24>;
  table.gemm[8] = gemm<decode_q8_0, ActLegacy, 34>;
  table.gemm[10] = gemm<decode_q2_k, ActK, 84>;
  table.gemm[11] = gemm<decode_q3_k, ActK, 110>;
  table.gemm[12] = gemm<decode_q4_k, ActK, 144>;
  table.gemm[13] = gemm<decode_q5_k, ActK, 176>;
  table.gemm[14] = gemm<decode_q6_k, ActK, 210>;
  table.gemm[39] = gemm<decode_mxfp4, ActLegacy, 17>;
  table.gemm[20] = gemm<decode_iq4_nl, ActLegacy, 18>;
  table.gemm[23] = gemm<decode_iq4_xs, ActK, 136>;
}

}  // namespace vks::cpuq
