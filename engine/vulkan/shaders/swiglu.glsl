// The one SwiGLU expression, silu(g) * u, shared by swiglu_f32 and the gate|up products' SwiGLU
// epilogue (common_matmul.glsl) so that both give the same bits.
float silu_times(float g, float u) { return (g / (1.0 + exp(-g))) * u; }

// GeGLU with GELU's tanh approximation (Gemma), as ref::gelu_glu.
float gelu_times(float g, float u) {
  return 0.5 * g * (1.0 + tanh(0.79788456080286535588 * g * (1.0 + 0.044715 * g * g))) * u;
}

// gpt-oss's clamped SwiGLU, as ref::swiglu_oai.
float swiglu_oai_times(float g, float u) {
  const float gc = min(g, 7.0);
  return gc / (1.0 + exp(-1.702 * gc)) * (clamp(u, -7.0, 7.0) + 1.0);
}
