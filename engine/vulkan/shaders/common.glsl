// Shared GLSL helpers of the core kernels.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "shader_params.h"

// Total order used by argmax/topk: larger value first, then smaller index; NaN counts as -inf.
float ordered_value(float v) { return isnan(v) ? uintBitsToFloat(0xff800000u) : v; }
bool ranks_before(float v, uint i, float bv, uint bi) { return v > bv || (v == bv && i < bi); }
