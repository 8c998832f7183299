// Optimized `gelu` for the opencl backend (tuned on PoCL's CPU device).
//
// Each work-item maps a contiguous chunk of ITEMS_PER_WI floats with float8 loads and stores,
// so every core streams through memory in order and the SIMD lanes run along the data. The
// last work-item also handles the tail that does not fill a float8.
__kernel void gelu_vec8(__global const float* x, __global float* y, int n) {
  const int chunk = 8 * VEC_PER_WI;
  const int begin = get_global_id(0) * chunk;
  if (begin >= n) return;
  const int end = min(begin + chunk, n);
  const int vec_end = begin + ((end - begin) & ~7);
  for (int i = begin; i < vec_end; i += 8) {
    const float8 v = vload8(0, x + i);
    vstore8(0.5f * v * (1.0f + erf(v * M_SQRT1_2_F)), 0, y + i);
  }
  for (int i = vec_end; i < end; ++i) y[i] = 0.5f * x[i] * (1.0f + erf(x[i] * M_SQRT1_2_F));
}
