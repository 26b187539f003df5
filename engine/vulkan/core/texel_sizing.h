#pragma once
// Sizes of texel-viewed buffers on Mesa's CPU device (lavapipe), chosen so its shader cache works.
#include <cstdint>

namespace vks::vk {

// The bytes to allocate (and cover with the texel view) for a texel-viewed buffer of `size` bytes
// on lavapipe: at least `size`, a multiple of 16, not a power of two, with bits 8..15 not all zero.
//
// Why: llvmpipe compiles a compute pipeline again at its first dispatch for every distinct
// "variant key", and the key of a texel buffer holds two bits taken from its size: whether the
// buffer's size is a power of two (pot_width) and whether bits 8..15 of the view's range are zero
// (a buffer view keeps its range where a texture view keeps its last mip level: level_zero_only).
// Matrices of different sizes bound to one pipeline thus gave it two or three variants. Those are
// also keyed by the shader's NIR, which llvmpipe rewrites in place when it compiles a variant but
// not when it loads one from its disk cache, so on a restart a later variant's key differed from
// the one cached the run before: every restart compiled a few variants again, for seconds each
// (issue 37: 26-34 s "warm" restarts of a 1B model). One size class, one variant, a stable key.
uint64_t single_variant_texel_bytes(uint64_t size);

}  // namespace vks::vk
