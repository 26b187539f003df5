// The one SwiGLU expression, silu(g) * u, shared by swiglu_f32 and the gate|up products' SwiGLU
// epilogue (common_matmul.glsl) so that both give the same bits.
float silu_times(float g, float u) { return (g / (1.0 + exp(-g))) * u; }
