// The sum of x[xb + j]^2 over j < n, by the 64 invocations of a workgroup: each its strided partial
// sum (one fma chain), then a fixed tree through shared memory. The order depends on nothing but n,
// so a row's sum is the same bits in any batch; rmsnorm_f32, l2norm_f32 and quantize_q8_f32 (its
// fused norm gives rmsnorm_f32's bits) all reduce this way. The includer declares the buffer x[]
// and a local size of 64; every invocation must call it (it has barriers), and all get the sum.
shared float sum_squares_partial[64];
float row_sum_squares(uint xb, uint n) {
  const uint lid = gl_LocalInvocationID.x;
  float s = 0.0;
  for (uint j = lid; j < n; j += 64u) s = fma(x[xb + j], x[xb + j], s);
  sum_squares_partial[lid] = s;
  barrier();
  [[unroll]] for (uint step = 32u; step > 0u; step >>= 1) {
    if (lid < step) sum_squares_partial[lid] += sum_squares_partial[lid + step];
    barrier();
  }
  return sum_squares_partial[0];
}
