#include "engine/vulkan/core/texel_sizing.h"

namespace vks::vk {

uint64_t single_variant_texel_bytes(uint64_t size) {
  uint64_t bytes = (size + 15) / 16 * 16;
  // Adding 256 changes bits 8..15 and ends a power of two: two steps at most.
  while ((bytes & (bytes - 1)) == 0 || ((bytes >> 8) & 0xff) == 0) bytes += 256;
  return bytes;
}

}  // namespace vks::vk
