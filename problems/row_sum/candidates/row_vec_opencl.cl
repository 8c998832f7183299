// Optimized `row_sum` for the opencl backend (tuned on PoCL's CPU device).
//
// One work-item per row, walking it with float8 loads into four independent accumulators, so
// each row streams through one core in order with SIMD along the row and no serial add chain.
// The row tail (cols % 32) is summed serially.
__kernel void row_sum_vec(__global const float* x, __global float* y, int rows, int cols) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const float* xr = x + (size_t)r * cols;
  const int body = cols & ~31;
  float8 s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  for (int c = 0; c < body; c += 32) {
    s0 += vload8(0, xr + c);
    s1 += vload8(0, xr + c + 8);
    s2 += vload8(0, xr + c + 16);
    s3 += vload8(0, xr + c + 24);
  }
  const float8 s = (s0 + s1) + (s2 + s3);
  float sum = ((s.s0 + s.s1) + (s.s2 + s.s3)) + ((s.s4 + s.s5) + (s.s6 + s.s7));
  for (int c = body; c < cols; ++c) sum += xr[c];
  y[r] = sum;
}
