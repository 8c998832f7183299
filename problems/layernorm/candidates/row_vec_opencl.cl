// Optimized `layernorm` for the opencl backend (tuned on PoCL's CPU device).
//
// One work-item per row, walking it with float8 loads: the row stays in that core's L1 for the
// three passes, the reductions use four independent float8 accumulators, and 1/sqrt(var + eps)
// is applied as one multiply. Row tails (cols % 32, then cols % 8) are handled serially.
float sum8(float8 v) { return ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7)); }

__kernel void layernorm_rows_vec(__global const float* x, __global const float* weight,
                                 __global const float* bias, __global float* y, int rows, int cols,
                                 float eps) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const float* xr = x + (size_t)r * cols;
  __global float* yr = y + (size_t)r * cols;
  const int body = cols & ~31;

  float8 s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  for (int c = 0; c < body; c += 32) {
    s0 += vload8(0, xr + c);
    s1 += vload8(0, xr + c + 8);
    s2 += vload8(0, xr + c + 16);
    s3 += vload8(0, xr + c + 24);
  }
  float sum = sum8((s0 + s1) + (s2 + s3));
  for (int c = body; c < cols; ++c) sum += xr[c];
  const float mean = sum / cols;

  s0 = 0.0f;
  s1 = 0.0f;
  s2 = 0.0f;
  s3 = 0.0f;
  for (int c = 0; c < body; c += 32) {
    const float8 d0 = vload8(0, xr + c) - mean, d1 = vload8(0, xr + c + 8) - mean;
    const float8 d2 = vload8(0, xr + c + 16) - mean, d3 = vload8(0, xr + c + 24) - mean;
    s0 += d0 * d0;
    s1 += d1 * d1;
    s2 += d2 * d2;
    s3 += d3 * d3;
  }
  float sq = sum8((s0 + s1) + (s2 + s3));
  for (int c = body; c < cols; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
  const float rstd = 1.0f / sqrt(sq / cols + eps);

  const int vec_end = cols & ~7;
  for (int c = 0; c < vec_end; c += 8) {
    const float8 v =
        (vload8(0, xr + c) - mean) * rstd * vload8(0, weight + c) + vload8(0, bias + c);
    vstore8(v, 0, yr + c);
  }
  for (int c = vec_end; c < cols; ++c) yr[c] = (xr[c] - mean) * rstd * weight[c] + bias[c];
}
