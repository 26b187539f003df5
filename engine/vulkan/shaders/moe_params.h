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

// moe_route_f32: route_experts on the device. Token t < n_tokens (logits rows logits_stride floats
// apart) gets ids[t][s] and weights[t][s] for s < n_used: softmax_first: scores are the softmax
// of the logits (else the logits); softmax_after: the chosen weights are softmaxed; normalize: divided
// by their sum; has_scale: multiplied by their expert's scale.
struct MoeRouteParams {
  uint n_tokens;
  uint n_experts;
  uint n_used;
  uint logits_stride;
  uint softmax_first;
  uint softmax_after;
  uint normalize;
  uint has_scale;
};

// moe_plan_i32: the n_choices = n_tokens * n_used routed ids grouped by expert (expert ascending,
// choices ascending inside each group), each group cut into slots of at most VKS_MOE_SLOT_ROWS rows:
// slots[s] = (expert, first row, rows, 0), then zeros up to max_slots; rows[choice],
// gather[row] = choice / n_used, row_expert[row].
struct MoePlanParams {
  uint n_choices;
  uint n_experts;
  uint n_used;
  uint max_slots;
};

// Rows of a group slot: a mul_mat_id grid's token tile (the rows kernels' and the lanes kernels'
// narrow tile), so the grid, sized for the worst case without knowing the groups, has one tile a
// slot and few slots to spare.
#define VKS_MOE_SLOT_ROWS 8
// Experts a routed layer may have on the device (moe_plan_i32's shared arrays).
#define VKS_MOE_MAX_EXPERTS 512
// Invocations of moe_plan_i32's one workgroup: each takes experts lid, lid + this, ...
#define VKS_MOE_PLAN_WG 64

#ifdef __cplusplus
static_assert(sizeof(MoeCombineParams) <= 128 && sizeof(MoeCombineParams) % 4 == 0);
static_assert(sizeof(MoeRouteParams) <= 128 && sizeof(MoeRouteParams) % 4 == 0);
static_assert(sizeof(MoePlanParams) <= 128 && sizeof(MoePlanParams) % 4 == 0);
}  // namespace vks::vk::shader
#endif

#endif  // VKS_MOE_PARAMS_H
