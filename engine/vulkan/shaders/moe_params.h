// Push constants of the expert kernels (the pattern of shader_params.h: 4-byte scalars only, one
// definition for C++ and GLSL).
#ifndef VKS_MOE_PARAMS_H
#define VKS_MOE_PARAMS_H

#ifdef __cplusplus
#include <cstdint>
namespace vks::vk::shader {
using uint = uint32_t;
#endif

// moe_combine_f32: for t < n_tokens, i < cols, x[t][i] += sum over s < n_used of
// w[t][s] * y[rows[t][s]][i] (rows, w: [n_tokens][n_used]; x rows x_stride floats apart, y rows
// y_stride).
struct MoeCombineParams {
  uint n_tokens;
  uint cols;
  uint n_used;
  uint x_stride;
  uint y_stride;
};

#ifdef __cplusplus
static_assert(sizeof(MoeCombineParams) <= 128 && sizeof(MoeCombineParams) % 4 == 0);
}  // namespace vks::vk::shader
#endif

#endif  // VKS_MOE_PARAMS_H
