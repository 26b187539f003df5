// The neondot level's kernels against the scalar level's, bit for bit, on an aarch64 CPU (run under
// qemu-aarch64 on other machines: tests/cpu/cross/CMakeLists.txt). Standalone (no GoogleTest, no
// other library: the cross toolchain has only its own C++ library): exits 1 with every mismatch
// printed. EXPECT_ISA=name also checks the level the CPU detection picks (qemu's -cpu max has
// dotprod, -cpu cortex-a53 has not).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/cpu/quant/act_quant.h"
#include "engine/cpu/quant/isa.h"
#include "engine/cpu/quant/kernels.h"

namespace {

using namespace vks::cpuq;

struct Type {
  const char* name;
  int id;  // ggml type id
  size_t block_bytes;
  std::vector<size_t> halves;  // where the block's fp16 scales are (random bytes elsewhere)
  bool e8m0 = false;           // byte 0 an E8M0 scale (MXFP4)
  bool k = false;              // 256-element blocks against ActQ8x256 (else 32 against ActQ8x32)
};

// An fp16 of magnitude about 2^-4..2^-1 (random mantissa and sign): no denormal, no overflow.
uint16_t random_half(std::mt19937& rng) {
  const uint16_t exponent = static_cast<uint16_t>(11 + rng() % 4);
  return static_cast<uint16_t>((rng() & 1u) << 15 | exponent << 10 | (rng() & 0x3FFu));
}

int failures = 0;

void check(const Type& type, const KernelTable& scalar, const KernelTable& neon, size_t n_rows, size_t n_tokens,
           size_t n_blocks, std::mt19937& rng) {
  const size_t w_stride = n_blocks * type.block_bytes + 8;  // rows not back to back
  std::vector<uint8_t> w(n_rows * w_stride);
  for (uint8_t& byte : w) byte = static_cast<uint8_t>(rng());
  for (size_t r = 0; r < n_rows; ++r) {
    for (size_t b = 0; b < n_blocks; ++b) {
      uint8_t* block = &w[r * w_stride + b * type.block_bytes];
      for (const size_t at : type.halves) {
        const uint16_t h = random_half(rng);
        std::memcpy(block + at, &h, 2);
      }
      if (type.e8m0) block[0] = static_cast<uint8_t>(120 + rng() % 14);
    }
  }
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  // Each token's blocks, with one spare block between tokens (a stride that is not the blocks').
  const size_t elements = type.k ? 256 : 32;
  const size_t act_block = type.k ? sizeof(ActQ8x256) : sizeof(ActQ8x32);
  const size_t act_stride = (n_blocks + 1) * act_block;
  std::vector<uint8_t> act_bytes(n_tokens * act_stride + 64);
  uint8_t* act = act_bytes.data() + (64 - reinterpret_cast<uintptr_t>(act_bytes.data()) % 64) % 64;
  std::vector<float> x(n_blocks * elements);
  for (size_t t = 0; t < n_tokens; ++t) {
    for (float& v : x) v = value(rng);
    if (type.k) {
      scalar.quantize_q8x256(x.data(), reinterpret_cast<ActQ8x256*>(act + t * act_stride), n_blocks);
    } else {
      scalar.quantize_q8x32(x.data(), reinterpret_cast<ActQ8x32*>(act + t * act_stride), n_blocks);
    }
  }
  const size_t y_stride = n_rows + 3;
  std::vector<float> want(n_tokens * y_stride, -7.0f), got(n_tokens * y_stride, -7.0f);
  const uint8_t* a = act;
  scalar.gemm[type.id](w.data(), w_stride, n_rows, a, act_stride, n_tokens, n_blocks, want.data(), y_stride);
  neon.gemm[type.id](w.data(), w_stride, n_rows, a, act_stride, n_tokens, n_blocks, got.data(), y_stride);
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0) {
      if (++failures <= 20) {
        std::printf("%s rows %zu tokens %zu blocks %zu: y[%zu] %.9g (scalar) != %.9g (neondot)\n", type.name, n_rows,
                    n_tokens, n_blocks, i, static_cast<double>(want[i]), static_cast<double>(got[i]));
      }
    }
  }
}

}  // namespace

int main() {
  if (const char* expect = std::getenv("EXPECT_ISA")) {
    const std::string detected(isa_name(detected_isa()));
    if (detected != expect) {
      std::printf("detected level %s, expected %s\n", detected.c_str(), expect);
      return 1;
    }
  }
  if (detected_isa() != CpuIsa::kNeonDot) {
    std::printf("this CPU has no dot product instructions: only its detection was checked\n");
    return 0;
  }
  KernelTable scalar;
  add_scalar_kernels(scalar);
  KernelTable neon = scalar;
  add_neondot_kernels(neon);
  const Type types[] = {
      {"Q4_0", 2, 18, {0}},           {"Q4_1", 3, 20, {0, 2}},       {"Q5_0", 6, 22, {0}},
      {"Q5_1", 7, 24, {0, 2}},        {"Q8_0", 8, 34, {0}},          {"IQ4_NL", 20, 18, {0}},
      {"MXFP4", 39, 17, {}, true},    {"Q4_K", 12, 144, {0, 2}, false, true},
      {"Q5_K", 13, 176, {0, 2}, false, true}, {"Q6_K", 14, 210, {208}, false, true},
      {"Q2_K", 10, 84, {80, 82}, false, true}, {"Q3_K", 11, 110, {108}, false, true},
      {"IQ4_XS", 23, 136, {0}, false, true},
  };
  std::mt19937 rng(7);
  int cases = 0;
  for (const Type& type : types) {
    if (neon.gemm[type.id] == scalar.gemm[type.id]) {
      std::printf("%s: the neondot level has no kernel of its own\n", type.name);
      return 1;
    }
    for (size_t n_rows : {1, 2, 3, 4, 5, 7, 9}) {
      for (size_t n_tokens : {1, 2, 3, 4, 5, 8, 9}) {
        for (size_t n_blocks : {size_t{1}, size_t{3}, type.k ? size_t{2} : size_t{8}}) {
          check(type, scalar, neon, n_rows, n_tokens, n_blocks, rng);
          ++cases;
        }
      }
    }
  }
  std::printf("%d cases, %d outputs differ\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
